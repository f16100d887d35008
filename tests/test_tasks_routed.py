"""Every Celery task of the project runs in this process in some test, so the statement-routing check
(tests/bank_routing.py) sees its statements on the test's own connections, as well as on the real
worker's (tests/routed_worker.py). The periodic ones and the bank jobs run here, over two banks with
rows; the others are run in process by the tests named below."""

from __future__ import annotations

from typing import Any

import pytest

from banks.models import Bank, Job
from banks.services.jobs import job_create
from banks.services.memories import memory_retain
from config.celery import app

PERIODIC = ("banks.prune_access_log", "banks.lifecycle_sweep", "banks.rescan_duplicates", "banks.count_lexemes",
            "banks.index_tags", "banks.grow_vector_indexes", "portability.sweep_jobs")
# (task, job kind, params): a job of a bank, run by its task.
BANK_JOBS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("banks.consolidate_observations", "consolidation", {}),
    ("banks.reindex_search_language", "search_language", {}),
    ("banks.rebuild_contexts", "rebuild_contexts", {}),
    ("banks.find_duplicates", "duplicates", {"threshold": 0.9, "full": True}),
    ("portability.run_job", "reembed", {}),
    ("portability.run_job", "reextract_entities", {}),
)
# Run in process elsewhere (the test that does it).
ELSEWHERE = {
    "banks.bulk_apply": "tests/curation/test_bulk_job.py::test_a_big_bulk_tag_runs_as_a_job_with_progress",
    "banks.complete_vector_index":
        "tests/banks/test_bank_vector_index.py::test_vectors_a_killed_fill_left_out_are_filled_by_the_sweep",
    "banks.remove_bank": "tests/banks/test_bank_removal.py::test_a_deletion_whose_worker_died_is_taken_up_again",
}


@pytest.fixture(autouse=True, scope="module")
def _tasks_registered() -> None:
    app.loader.import_default_modules()  # the apps' tasks modules, found as a worker finds them


@pytest.fixture
def two_banks(make_bank: Any) -> list[Bank]:
    banks = [make_bank("team-one"), make_bank("team-two")]
    for bank in banks:
        for text in ("Ortega keeps the ferry's keys at the harbour office.",
                     "The ferry leaves the harbour at seven.", "Alice Smith likes jazz and blues."):
            memory_retain(bank=bank, text=text, actor="test", near_dedup=False)
    return banks


def test_every_task_is_run_in_process_by_a_test():
    ours = {name for name in app.tasks if name.split(".", 1)[0] in ("banks", "portability", "agents")}
    covered = set(PERIODIC) | {task for task, _, _ in BANK_JOBS} | set(ELSEWHERE) | {"banks.ping", "agents.ingest_turn"}
    assert ours == covered


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", PERIODIC)
def test_a_periodic_task_runs_under_the_check(name, two_banks):
    result = app.tasks[name].apply()
    assert result.successful(), result.traceback


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("name", "kind", "params"), BANK_JOBS, ids=[f"{t}:{k}" for t, k, _ in BANK_JOBS])
def test_a_bank_job_runs_under_the_check(name, kind, params, two_banks):
    job = job_create(kind=kind, actor="test", bank=two_banks[0], params=params)
    result = app.tasks[name].apply(args=[job.pk])
    assert result.successful(), result.traceback
    job.refresh_from_db()
    assert job.state == "succeeded", job.message
    assert Job.objects.filter(bank=two_banks[1]).count() == 0


@pytest.mark.django_db(transaction=True)
def test_the_tasks_that_take_values_run_under_the_check(two_banks):
    assert app.tasks["banks.ping"].apply(args=["hello"]).successful()
    result = app.tasks["agents.ingest_turn"].apply(
        args=[two_banks[0].pk, "I adopted a greyhound called Biscuit.", "", "test", "turn-1"])
    assert result.successful(), result.traceback
