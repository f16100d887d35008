"""A bulk action over a big selection runs as a job on the worker, with progress an operator watches.

Past ``JOB_MIN`` memories (or a selection too big to count quickly) the curation page starts a job
instead of holding a web worker: the job keeps what the operator chose (the filters or the ids, the
action and its arguments), rebuilds the selection on the worker and applies it chunk by chunk through
``bulk_apply`` (one statement per chunk), recording how many rows it has looked at after each chunk.
A cancel stops it between chunks; what was applied stays applied.
"""

from __future__ import annotations

from typing import Any

from django.http import QueryDict

from banks.models import Bank, Job, Memory
from banks.selectors.memories import MemoryFilters, memory_queryset
from banks.services.bulk import ACTIONS, bulk_apply
from banks.services.jobs import JobOutcome, job_create, job_enqueue, job_progress
from memoryhub.errors import InvalidInput
from memoryhub.queue import send_task

KIND = "bulk"
# Selections this big (or that cannot be counted quickly) run as a job.
JOB_MIN = 100_000


def bulk_runs_as_job(count: int | None) -> bool:
    return count is None or count > JOB_MIN


def bulk_job_start(*, bank: Bank, action: str, actor: str, filters: MemoryFilters | None = None,
                   ids: list[str] | None = None, tag: str = "", reason: str = "", compliance: bool = False,
                   target: Bank | None = None, total: int | None = None) -> Job:
    """Queue ``action`` over the memories ``filters`` select (or ``ids``)."""
    if action not in ACTIONS:
        raise InvalidInput(f"must be one of {', '.join(ACTIONS)}", field="action")
    params: dict[str, Any] = {
        "action": action, "tag": tag, "reason": reason, "compliance": compliance,
        "target": target.bank_id if target is not None else None,
        "filters": filters.as_query() if filters is not None else None, "ids": ids if filters is None else None,
    }
    job = job_create(kind=KIND, actor=actor, bank=bank, params=params, total=total)
    return job_enqueue(job=job, send=lambda: send_task("banks.bulk_apply", job.pk))


def bulk_job_work(job: Job, bank: Bank) -> JobOutcome:
    """The job's work on the worker (banks.tasks.bulk_apply_job)."""
    params = job.params
    if params.get("filters") is not None:
        query = QueryDict(mutable=True)
        query.update(params["filters"])
        rows = memory_queryset(bank, MemoryFilters.from_query(query))
    else:
        rows = Memory.objects.filter(bank=bank, memory_id__in=params.get("ids") or [])
    target = Bank.objects.active().get(bank_id=params["target"]) if params.get("target") else None
    total = job.progress_total
    outcome = bulk_apply(bank=bank, rows=rows, action=params["action"], actor=job.created_by, tag=params["tag"],
                         reason=params["reason"], compliance=bool(params["compliance"]), target=target,
                         progress=lambda seen: job_progress(job=job, done=seen, total=total))
    counts = {"touched": outcome.touched, "skipped": outcome.skipped}
    return counts, {"action": outcome.action, **counts}


__all__ = ["JOB_MIN", "KIND", "bulk_job_start", "bulk_job_work", "bulk_runs_as_job"]
