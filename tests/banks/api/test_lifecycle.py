"""Lifecycle policies: set over /v1/admin, run now (Astrocyte's LifecycleRunResult), run by the beat task."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from banks.models import AuditEvent, BankMembership, Job, LegalHold, Memory
from banks.services.lifecycle import lifecycle_policy_set
from banks.services.memories import memory_retain
from tests.worker import wait_for

B = "user-alice"
POLICY = f"/v1/admin/banks/{B}/lifecycle"


def _aged(bank, text, days, **kwargs):
    memory = memory_retain(bank=bank, text=text, actor="test", **kwargs).memory
    Memory.objects.filter(pk=memory.pk).update(created_at=timezone.now() - timedelta(days=days))
    return memory.memory_id


@pytest.fixture
def aged(bank):
    return {
        "old": _aged(bank, "Alice moved to Porto in 2019.", 400),
        "stale": _aged(bank, "Alice's old phone was a Nokia.", 100),
        "fresh": _aged(bank, "Alice started learning Greek.", 3),
        "kept": _aged(bank, "Alice's passport number ends in 42.", 900, tags=["legal"]),
        "episode": _aged(bank, "Alice missed the 9:15 train today.", 10, fact_type="experience"),
    }


@pytest.mark.django_db
def test_run_applies_the_policy_and_answers_like_astrocyte(api, bank, aged):
    answer = api.put(POLICY, {"delete_after_days": 365, "archive_after_days": 90, "exempt_tags": ["legal"],
                              "fact_type_overrides": {"experience": {"delete_after_days": 7}}})
    assert answer.status_code == 200, answer.content
    assert answer.json()["enabled"] is True and answer.json()["exempt_tags"] == ["legal"]

    run = api.post("/v1/admin/lifecycle", {"bank_id": B})
    assert run.status_code == 200, run.content
    result = run.json()
    assert {"archived_count", "deleted_count", "skipped_count", "actions"} <= set(result)
    assert (result["deleted_count"], result["archived_count"], result["skipped_count"]) == (2, 1, 2)
    by_id = {a["memory_id"]: a for a in result["actions"]}
    assert by_id[aged["old"]]["action"] == "delete" and by_id[aged["episode"]]["action"] == "delete"
    assert by_id[aged["stale"]] == {"memory_id": aged["stale"], "action": "archive",
                                    "reason": "90 days since creation"}
    assert by_id[aged["kept"]]["reason"] == "exempt tag legal"
    live = set(Memory.objects.live().filter(bank=bank).values_list("memory_id", flat=True))
    assert live == {aged["fresh"], aged["kept"]}
    assert Memory.objects.get(memory_id=aged["stale"]).archived_at is not None
    assert Memory.objects.get(memory_id=aged["old"]).forgotten_at is not None  # a tombstone, not erased

    job = Job.objects.get(pk=result["job_id"])
    assert job.kind == "lifecycle" and job.state == "succeeded"
    assert job.counts == {"archived": 1, "deleted": 2, "kept": 2}
    assert AuditEvent.objects.filter(bank=bank, action="memory.archive", reason="lifecycle policy").exists()
    assert api.get(POLICY).json()["last_run_at"] is not None
    # A second run finds nothing more to do.
    again = api.post("/v1/admin/lifecycle", {"bank_id": B}).json()
    assert (again["deleted_count"], again["archived_count"]) == (0, 0)


@pytest.mark.django_db
def test_a_held_bank_keeps_what_would_be_deleted(api, bank, aged):
    LegalHold.objects.create(bank=bank, hold_id="case-1", reason="litigation", set_by="user:legal")
    lifecycle_policy_set(bank=bank, actor="test", delete_after_days=365)
    result = api.post("/v1/admin/lifecycle", {"bank_id": B}).json()
    assert result["deleted_count"] == 0
    assert {a["reason"] for a in result["actions"] if a["memory_id"] in (aged["old"], aged["kept"])} == {
        "legal hold"}


@pytest.mark.django_db
def test_policy_input_is_checked_and_new_banks_answer_empty(api, api_for, bank):
    bad = api.put(POLICY, {"archive_after_days": -3})
    assert bad.status_code == 400 and "archive_after_days" in bad.json()["detail"]
    bad = api.put(POLICY, {"fact_type_overrides": {"world": {"ttl": 3}}})
    assert bad.status_code == 400 and "fact_type_overrides.world" in bad.json()["detail"]
    client = api_for({"user-*": ["admin"]})
    empty = client.post("/v1/admin/lifecycle", {"bank_id": "user-new"})
    assert empty.status_code == 200
    assert (empty.json()["deleted_count"], empty.json()["archived_count"], empty.json()["actions"]) == (0, 0, [])
    assert client.get("/v1/admin/banks/user-new/lifecycle").json()["enabled"] is False
    no_policy = api.post("/v1/admin/lifecycle", {"bank_id": B}).json()
    assert no_policy["skipped_count"] == 0 and Job.objects.get(pk=no_policy["job_id"]).state == "succeeded"


@pytest.mark.django_db
def test_bank_page_shows_the_policy_and_the_last_runs(operator, operator_client, api, bank, aged):
    BankMembership.objects.create(user=operator, bank=bank, role="admin")
    lifecycle_policy_set(bank=bank, actor="test", delete_after_days=365)
    job_id = api.post("/v1/admin/lifecycle", {"bank_id": B}).json()["job_id"]
    page = operator_client.get(f"/banks/{B}/").content.decode()
    assert "Delete after 365 days" in page and f"/banks/{B}/jobs/{job_id}/" in page
    job_page = operator_client.get(f"/banks/{B}/jobs/{job_id}/").content.decode()
    assert "deleted 2" in job_page


def test_the_sweep_is_scheduled():
    entry = settings.CELERY_BEAT_SCHEDULE["banks-lifecycle-sweep"]
    assert entry["task"] == "banks.lifecycle_sweep" and float(entry["schedule"]) > 0


def test_the_sweep_runs_every_bank_with_a_policy_on_the_worker(celery_worker, make_bank):
    from banks.tasks import lifecycle_sweep

    with_policy, without = make_bank("user-alice"), make_bank("user-bob")
    _aged(with_policy, "Alice moved to Porto in 2019.", 400)
    _aged(without, "Bob moved to Faro in 2019.", 400)
    lifecycle_policy_set(bank=with_policy, actor="test", delete_after_days=30)
    lifecycle_sweep.delay()
    job = wait_for(lambda: Job.objects.filter(kind="lifecycle", state="succeeded").first(), timeout=60)
    assert job.bank == with_policy and job.counts["deleted"] == 1 and job.created_by == "system:lifecycle"
    assert not Job.objects.filter(kind="lifecycle", bank=without).exists()
    assert Memory.objects.live().filter(bank=without).count() == 1
