"""Re-embedding a bank: reachable from the bank's settings, a job on a real worker, a batch at a time,
resumable after its last committed batch."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from banks.content import content_hash
from banks.models import Job, Memory
from banks.providers import bank_embedder
from tests.worker import wait_for

N = 1200  # more than two batches of 500


@pytest.mark.worker
def test_reembed_runs_from_bank_settings_and_resumes_after_its_last_batch(celery_worker, make_bank,
                                                                          django_user_model):
    bank = make_bank("team-vectors")
    now = timezone.now()
    rows = Memory.objects.bulk_create([
        Memory(bank=bank, memory_id=f"m{i:05d}", text=f"note {i}", retained_at=now, created_at=now,
               content_hash=content_hash(f"note {i}"), embedding=[0.0] * 3 + [1.0], embedding_model="old-model",
               embedding_dims=4) for i in range(N)])
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    settings_page = client.get("/banks/team-vectors/").content.decode()
    assert 'name="kind" value="reembed"' in settings_page and bank_embedder(bank).name in settings_page

    # A first run that stopped after its first batch: its counts hold the last primary key done.
    stopped = Job.objects.create(kind="reembed", bank=bank, state="failed", progress_done=500, progress_total=N,
                                 counts={"reembedded": 500, "after_pk": rows[499].pk}, created_by="test")
    Memory.objects.filter(pk__lte=rows[499].pk, bank=bank).update(embedding_model=bank_embedder(bank).name)
    assert "Resume after the last committed batch" in client.get(
        f"/banks/team-vectors/jobs/{stopped.pk}/").content.decode()
    client.post(f"/banks/team-vectors/jobs/{stopped.pk}/resume")
    resumed = wait_for(lambda: Job.objects.filter(kind="reembed", state__in=Job.FINISHED).exclude(
        pk=stopped.pk).first(), timeout=120)
    assert resumed.state == "succeeded", resumed.message
    assert resumed.params["after_pk"] == rows[499].pk and resumed.params["resume_of"] == stopped.pk
    assert resumed.progress_done == resumed.progress_total == N - 500  # only what was left

    embedder = bank_embedder(bank)
    assert Memory.objects.filter(bank=bank, embedding_model=embedder.name,
                                 embedding_dims=embedder.dimensions).count() == N - 500
    # The batch before the resume point was not touched again (its vectors are still the old ones).
    assert Memory.objects.get(pk=rows[0].pk).embedding_dims == 4

    # From the settings page: the whole bank, as a job.
    response = client.post("/banks/team-vectors/transfer/start", {"kind": "reembed"})
    assert response.status_code == 302
    full = wait_for(lambda: Job.objects.filter(kind="reembed", state__in=Job.FINISHED).exclude(
        pk__in=[stopped.pk, resumed.pk]).first(), timeout=120)
    assert full.state == "succeeded" and full.progress_done == N and full.counts == {"reembedded": N}
    assert Memory.objects.filter(bank=bank, embedding_dims=embedder.dimensions).count() == N


@pytest.mark.django_db
def test_reembedding_a_bank_writes_its_own_rows_alone(make_bank):
    """Run in this process (the routing check sees each statement; the job's usual home, the worker, is
    another process): the update names the bank, and the other bank's vectors stay as they were."""
    from portability.jobs import reembed_bank

    now = timezone.now()

    def fill(bank_id: str) -> list[Memory]:
        bank = make_bank(bank_id)
        return Memory.objects.bulk_create([
            Memory(bank=bank, memory_id=f"m{i}", text=f"note {i}", retained_at=now, created_at=now,
                   content_hash=content_hash(f"note {i}"), embedding=[0.0] * 3 + [1.0], embedding_model="old-model",
                   embedding_dims=4) for i in range(3)])

    mine, other = fill("team-mine"), fill("team-other")
    assert reembed_bank(bank=mine[0].bank) == 3
    embedder = bank_embedder(mine[0].bank)
    assert set(Memory.objects.filter(bank=mine[0].bank).values_list("embedding_model", flat=True)) == {embedder.name}
    assert list(Memory.objects.filter(bank=other[0].bank).values_list("embedding_model", "embedding_dims")) == \
        [("old-model", 4)] * 3
