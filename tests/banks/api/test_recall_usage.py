"""Recall usage: per-bank counters and per-memory last recall, in bank health and in lifecycle."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from banks.models import Bank, BankUsage, Memory
from banks.services.lifecycle import lifecycle_run
from banks.services.memories import memory_retain
from banks.services.usage import usage_flush, usage_record_error

pytestmark = pytest.mark.django_db
B = "user-alice"
HEALTH = f"/v1/admin/banks/{B}/health"


def retain(bank: Bank, text: str, **kwargs) -> Memory:
    memory = memory_retain(bank=bank, text=text, actor="test", **kwargs).memory
    assert memory is not None
    return memory


def recall(api, query: str, bank_id: str = B) -> dict:
    response = api.post("/v1/recall", {"query": query, "bank_id": bank_id})
    assert response.status_code == 200, response.content
    return response.json()


def test_recall_counts_per_bank_and_marks_what_it_returned(api, bank):
    jazz = retain(bank, "Alice likes jazz records.")
    other = retain(bank, "The office moved to Lisbon.")
    assert Memory.objects.get(pk=jazz.pk).last_recalled_at is None
    answer = recall(api, "jazz records")
    returned = {h["memory_id"] for h in answer["hits"]}
    assert jazz.memory_id in returned
    marked = dict(Memory.objects.filter(bank=bank).values_list("memory_id", "last_recalled_at"))
    assert all((marked[m] is not None) == (m in returned) for m in (jazz.memory_id, other.memory_id))
    first_mark = marked[jazz.memory_id]

    recall(api, "jazz records")
    usage = BankUsage.objects.get(bank=bank)
    assert (usage.recall_count, usage.recall_hit_count, usage.error_count) == (2, 2, 0)
    assert usage.recall_score_sum == pytest.approx(2 * answer["hits"][0]["score"], rel=1e-6)
    # Within the hour a memory is not written again, however often it is recalled.
    assert Memory.objects.get(pk=jazz.pk).last_recalled_at == first_mark
    # An hour later it is.
    Memory.objects.filter(pk=jazz.pk).update(last_recalled_at=first_mark - timedelta(hours=2))
    recall(api, "jazz records")
    assert Memory.objects.get(pk=jazz.pk).last_recalled_at > first_mark


def test_recall_does_not_touch_the_changes_feed(api, bank):
    jazz = retain(bank, "Alice likes jazz records.")
    before = Memory.objects.get(pk=jazz.pk).updated_at
    recall(api, "jazz")
    assert Memory.objects.get(pk=jazz.pk).updated_at == before


def test_a_recall_of_a_bank_never_written_counts_nothing_and_creates_nothing(api_for):
    client = api_for({"never-written": ["read"]})
    assert recall(client, "anything", bank_id="never-written")["hits"] == []
    assert not Bank.objects.filter(bank_id="never-written").exists() and not BankUsage.objects.exists()


def test_the_answer_goes_out_when_usage_cannot_be_written(api, bank):
    retain(bank, "Alice likes jazz records.")
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE banks_bankusage RENAME TO banks_bankusage_away")
    try:
        answer = recall(api, "jazz")
        assert answer["hits"] and answer["hits"][0]["text"] == "Alice likes jazz records."
        # The failed write was rolled back to its savepoint: the request's connection still works.
        assert Memory.objects.filter(bank=bank).count() == 1
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE banks_bankusage_away RENAME TO banks_bankusage")
    assert not BankUsage.objects.exists()


def test_health_reports_real_recall_and_reflect_numbers(api, bank):
    retain(bank, "Alice likes jazz records.")
    retain(bank, "Alice plays the piano.")
    empty = api.get(HEALTH).json()["metrics"]
    assert empty["recall_count"] == 0.0 and empty["recall_hit_rate"] == 0.0 and empty["reflect_count"] == 0.0
    assert empty["reflect_success_rate"] == 1.0  # Astrocyte's value: no reflect, no failure
    recall(api, "jazz")
    recall(api, "zzzqqq unrelated xylophone")
    assert api.post("/v1/reflect", {"query": "What music does Alice like?", "bank_id": B}).status_code == 200
    body = api.get(HEALTH).json()
    metrics = body["metrics"]
    usage = BankUsage.objects.get(bank=bank)
    assert metrics["recall_count"] == 2.0 and metrics["reflect_count"] == 1.0
    assert metrics["recall_hit_rate"] == pytest.approx(usage.recall_hit_count / 2)
    assert metrics["avg_recall_score"] == pytest.approx(usage.recall_score_sum / usage.recall_hit_count, abs=1e-4)
    assert metrics["reflect_success_rate"] == 1.0
    assert metrics["recall_to_retain_ratio"] == pytest.approx(1.0)
    assert body["last_recalled_at"] is not None and body["error_count"] == 0
    assert all(isinstance(value, float) for value in metrics.values())
    assert metrics["dedup_rate"] == 0.0  # no retain came through the API yet

    for text in ("Alice sings in a choir.", "Alice sings in a choir.", "Alice reads novels."):
        assert api.post("/v1/retain", {"content": text, "bank_id": B}).status_code == 200
    assert api.get(HEALTH).json()["metrics"]["dedup_rate"] == pytest.approx(1 / 3, abs=1e-4)

    usage_record_error([bank])
    failing = api.get(HEALTH).json()
    assert failing["error_count"] == 1 and failing["last_error_at"] is not None
    assert "recall_errors" in {i["code"] for i in failing["issues"]}
    listed = api.get("/v1/admin/banks/health").json()["banks"]
    assert [b["metrics"]["recall_count"] for b in listed if b["bank_id"] == B] == [2.0]


def test_lifecycle_archives_from_the_last_recall_when_there_is_one(api, bank):
    recalled = retain(bank, "Alice likes jazz records.", tags=["music"])
    idle = retain(bank, "The office moved to Lisbon.")
    Memory.objects.filter(pk__in=[recalled.pk, idle.pk]).update(created_at=timezone.now() - timedelta(days=100))
    Memory.objects.filter(pk=recalled.pk).update(last_recalled_at=timezone.now() - timedelta(days=95))
    assert api.put(f"/v1/admin/banks/{B}/lifecycle", {"archive_after_days": 30}).status_code == 200
    # The recall is what makes it recent (the tag keeps the other memory out of the answer).
    assert api.post("/v1/recall", {"query": "jazz", "bank_id": B, "tags": ["music"]}).json()["hits"]
    outcome = lifecycle_run(bank=bank, actor="test")
    by_id = {a["memory_id"]: a for a in outcome.actions}
    assert by_id[recalled.memory_id] == {"memory_id": recalled.memory_id, "action": "keep",
                                        "reason": "within policy"}
    assert by_id[idle.memory_id] == {"memory_id": idle.memory_id, "action": "archive",
                                    "reason": "30 days since creation"}
    Memory.objects.filter(pk=recalled.pk).update(last_recalled_at=timezone.now() - timedelta(days=40))
    again = {a["memory_id"]: a for a in lifecycle_run(bank=bank, actor="test").actions}
    assert again[recalled.memory_id]["reason"] == "30 days since last recall"


def test_counts_gathered_in_a_process_are_written_together_by_one_flush(api, bank, settings):
    settings.MEMORYHUB_USAGE_FLUSH_SECONDS = 3600  # the writer thread will not run during the test
    jazz = retain(bank, "Alice likes jazz records.")
    usage_flush()  # nothing left over from elsewhere
    for _ in range(3):
        recall(api, "jazz records")
    api.post("/v1/retain", {"content": "Alice also likes blues.", "bank_id": B})
    # Gathered, not yet written: the requests did not wait for the counter row.
    assert not BankUsage.objects.filter(bank=bank).exists()
    assert Memory.objects.get(pk=jazz.pk).last_recalled_at is None
    usage_flush()
    usage = BankUsage.objects.get(bank=bank)
    assert (usage.recall_count, usage.recall_hit_count, usage.retain_call_count) == (3, 3, 1)
    assert usage.last_recalled_at is not None
    assert Memory.objects.get(pk=jazz.pk).last_recalled_at == usage.last_recalled_at
    usage_flush()  # an empty flush writes nothing more
    assert BankUsage.objects.get(bank=bank).recall_count == 3


@pytest.mark.django_db(transaction=True)
def test_the_writer_thread_writes_the_counts_within_its_interval(make_bank, api_for, settings):
    settings.MEMORYHUB_USAGE_FLUSH_SECONDS = 0.2
    bank = make_bank("usage-thread")
    retain(bank, "Alice likes jazz records.")
    client = api_for({bank.bank_id: ["read", "write"]})
    recall(client, "jazz", bank_id=bank.bank_id)
    deadline = time.monotonic() + 10
    while not BankUsage.objects.filter(bank=bank, recall_count=1).exists():
        assert time.monotonic() < deadline, "the usage writer thread wrote nothing in 10 s"
        time.sleep(0.05)
