"""Deleting a big bank: hidden at once, its rows removed in chunks by a job (a real worker here), with
progress; small banks go inside the request; a deletion whose worker died is taken up again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from banks.content import content_hash
from banks.models import AuditEvent, Bank, DuplicatePair, Entity, Job, Memory, MemoryEntity, MemoryLink
from banks.providers import bank_embedder
from banks.services import bank_removal
from banks.services.banks import bank_delete
from banks.services.memories import memory_retain
from tests.conftest import ApiClient
from tests.worker import wait_for

BIG = 2500


def _bulk(bank: Bank, n: int) -> list[Memory]:
    embedder = bank_embedder(bank)
    now = timezone.now()
    texts = [f"{bank.bank_id} note {i} about item {i * 7919 % 10007}" for i in range(n)]
    return Memory.objects.bulk_create([
        Memory(bank=bank, memory_id=f"m{i:05d}", text=t, retained_at=now, created_at=now, content_hash=content_hash(t),
               embedding=v, embedding_model=embedder.name, embedding_dims=embedder.dimensions)
        for i, (t, v) in enumerate(zip(texts, embedder.embed(texts), strict=True))])


def _fill(bank: Bank, n: int) -> None:
    rows = _bulk(bank, n)
    memory_retain(bank=bank, text="Alice Smith met Bob Jones in Lisbon.", actor="test")  # entities, links
    MemoryLink.objects.create(bank=bank, source=rows[0], target=rows[1], link_type="related")
    DuplicatePair.objects.create(bank=bank, memory_a=rows[0], memory_b=rows[1], similarity=0.9)


@pytest.mark.worker
def test_a_big_bank_is_deleted_by_a_job_with_progress(celery_worker, make_bank, make_token, settings):
    settings.MEMORYHUB_BANK_DELETE_SYNC_MEMORIES = 1000
    big, other = make_bank("team-big"), make_bank("team-other")
    _fill(big, BIG)
    _fill(other, 50)
    api = ApiClient(make_token({"team-*": ["*"]}))

    response = api.delete("/v1/banks/team-big", {"confirm": "team-big", "reason": "project closed"})
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["deleted"] is False and body["accepted"] is True and body["job_id"]
    assert response["Location"] == f"/v1/jobs/{body['job_id']}?bank_id=team-big"
    # Gone for every client at once, and nothing can be written to it meanwhile.
    assert api.get("/v1/banks/team-big").status_code == 404
    refused = api.post("/v1/retain", {"bank_id": "team-big", "content": "one more"})
    assert refused.status_code == 409 and "being deleted" in refused.json()["detail"]

    def finished():  # noqa: ANN202
        polled = api.get(response["Location"].split("?")[0], {"bank_id": "team-big"})
        assert polled.status_code == 200, polled.content
        return polled.json() if polled.json()["state"] in ("succeeded", "failed") else None

    job = wait_for(finished, timeout=180)
    assert job["state"] == "succeeded", job["message"]
    assert job["kind"] == "bank_delete" and job["bank_id"] == "team-big"
    assert job["progress"]["done"] == job["progress"]["total"] == BIG + 1
    assert job["counts"]["memories"] == BIG + 1 and job["counts"]["entities"] >= 2
    assert not Bank.objects.filter(bank_id="team-big").exists()
    assert not Memory.objects.filter(bank_id=big.pk).exists()
    assert Memory.objects.filter(bank=other).count() == 51 and Entity.objects.filter(bank=other).count() >= 2
    assert MemoryEntity.objects.filter(memory__bank=other).exists()
    assert DuplicatePair.objects.filter(bank=other).count() == MemoryLink.objects.filter(bank=other).count() == 1
    # The bank's audit trail outlives it, unlinked from the row but still named.
    kept = AuditEvent.objects.filter(bank_ref="team-big", action="memory.retain")
    assert kept.exists() and not kept.filter(bank__isnull=False).exists()
    event = AuditEvent.objects.get(action="bank.delete", bank_ref="team-big")
    assert event.reason == "project closed" and event.details["memory_count"] == BIG + 1

    # Another admin's token cannot see the job of a bank it holds nothing on.
    stranger = ApiClient(make_token({"elsewhere": ["*"]}))
    assert stranger.get(f"/v1/jobs/{body['job_id']}", {"bank_id": "team-big"}).status_code == 403

    # A small bank: at once, unless the client asks for a job.
    assert api.delete("/v1/banks/team-other", {"confirm": "team-other", "async": "true"}).status_code == 202
    small = make_bank("team-small")
    assert api.delete("/v1/banks/team-small", {"confirm": "team-small"}).json() == {"deleted": True,
                                                                                   "bank_id": "team-small"}
    assert not Bank.objects.filter(pk=small.pk).exists()


@pytest.mark.django_db
def test_the_curation_delete_calls_the_same_service(make_bank, django_user_model, settings,
                                                    django_capture_on_commit_callbacks):
    settings.MEMORYHUB_BANK_DELETE_SYNC_MEMORIES = 10
    bank = make_bank("team-ui")
    _bulk(bank, 30)
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    with django_capture_on_commit_callbacks(execute=True):  # the job runs in-process (eager) here
        response = client.post("/banks/team-ui/delete", {"confirm": "team-ui", "reason": "test"}, follow=True)
    assert "being deleted in the background" in response.content.decode()
    job = Job.objects.get(kind="bank_delete")
    assert job.state == "succeeded" and job.progress_done == 30
    assert not Bank.objects.filter(bank_id="team-ui").exists()


@pytest.mark.django_db
def test_a_deletion_whose_worker_died_is_taken_up_again(make_bank, django_capture_on_commit_callbacks):
    from portability.services.job_health import jobs_sweep

    bank = make_bank("team-dead")
    _bulk(bank, 20)
    bank_removal.bank_hide(bank)
    long_ago = timezone.now() - timedelta(hours=1)
    Bank.objects.filter(pk=bank.pk).update(deleted_at=long_ago)
    dead = Job.objects.create(kind="bank_delete", bank=bank, state="running", started_at=long_ago,
                              heartbeat_at=long_ago, params={"bank_id": "team-dead", "memory_count": 20})
    with django_capture_on_commit_callbacks(execute=True):
        swept = jobs_sweep()
    assert swept["dead"] == 1 and swept["deletions_resumed"] == 1
    dead.refresh_from_db()
    assert dead.state == "failed"
    assert Job.objects.filter(kind="bank_delete", state="succeeded").count() == 1
    assert not Bank.objects.filter(pk=bank.pk).exists()


@pytest.mark.django_db
def test_deletion_refuses_a_wrong_confirmation_and_keeps_the_bank(make_bank):
    bank = make_bank("team-keep")
    _bulk(bank, 3)
    from memoryhub.errors import InvalidInput

    with pytest.raises(InvalidInput):
        bank_delete(bank=bank, actor="test", confirm="team-kee")
    bank.refresh_from_db()
    assert bank.deleted_at is None and bank.memories.count() == 3


@pytest.mark.django_db
def test_the_home_page_follows_deletions_in_progress(make_bank, django_user_model):
    from banks.models import BankMembership

    bank = make_bank("team-going")
    owner = django_user_model.objects.create_user(username="owner", password="pw-owner-123")
    viewer = django_user_model.objects.create_user(username="viewer", password="pw-viewer-123")
    BankMembership.objects.create(user=owner, bank=bank, role="admin")
    BankMembership.objects.create(user=viewer, bank=bank, role="viewer")
    bank_removal.bank_hide(bank)
    Job.objects.create(kind="bank_delete", bank=bank, state="running", progress_done=3000, progress_total=12000,
                       params={"bank_id": "team-going"}, heartbeat_at=timezone.now())
    client = Client()
    client.force_login(owner)
    page = client.get("/").content.decode()
    assert "Banks being deleted" in page and "3000 of 12000 memories removed" in page
    assert 'href="/banks/team-going/"' not in page  # gone from the bank list
    part = client.get("/?part=deletions", HTTP_HX_REQUEST="true").content.decode()
    assert part.lstrip().startswith('<div id="deletions">') and "3000 of 12000" in part
    client.force_login(viewer)
    assert "Banks being deleted" not in client.get("/").content.decode()


@pytest.mark.django_db
def test_the_api_document_says_a_bank_deletion_may_answer_202(api):
    operation = api.client.get("/v1/openapi.json").json()["paths"]["/v1/banks/{bank_id}"]["delete"]
    assert {"200", "202"} <= set(operation["responses"])
    assert "job_id" in operation["responses"]["202"]["content"]["application/json"]["schema"]["properties"]
    assert {p["name"] for p in operation["parameters"]} >= {"confirm", "reason", "async"}
