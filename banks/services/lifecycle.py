"""Lifecycle: set a bank's retention policy, and run it (archive and delete what it says), as a job.

Every run is a Job of kind ``lifecycle`` whose counts are the run's result, whether it was asked
for over REST, from MCP, or by the periodic sweep. Deletes go through ``memory_forget`` and
archives through ``memories_archive``, so holds, tombstones and audit events work as everywhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from banks.access import Principal, authorize
from banks.live.lifecycle import ARCHIVE, DELETE, KEEP, Policy, PolicyError, decide, policy_from
from banks.models import Bank, Job, LifecyclePolicy, Memory
from banks.selectors.holds import bank_under_hold
from banks.services.audit import audit_record
from banks.services.forget import memory_forget
from banks.services.jobs import (
    JobCancelled,
    job_create,
    job_fail,
    job_finish,
    job_progress,
    job_pulse,
    job_start,
    job_stopped_cleanly,
)
from banks.services.memory_archiving import memories_archive
from memoryhub.errors import InvalidInput

logger = logging.getLogger(__name__)
CHUNK = 1000
# The run's answer lists at most this many per-memory actions; the counts are always complete.
MAX_ACTIONS = 1000
POLICY_FIELDS = ("enabled", "delete_after_days", "archive_after_days", "fact_type_overrides", "exempt_tags")


@dataclass
class LifecycleOutcome:
    archived_count: int = 0
    deleted_count: int = 0
    skipped_count: int = 0
    actions: list[dict[str, str]] = field(default_factory=list)
    actions_truncated: bool = False
    job_id: int | None = None


def _policy(row: LifecyclePolicy) -> Policy:
    return policy_from(delete_after_days=row.delete_after_days, archive_after_days=row.archive_after_days,
                       fact_type_overrides=row.fact_type_overrides, exempt_tags=list(row.exempt_tags))


def lifecycle_policy_set(*, bank: Bank, actor: str, by: Principal | None = None, **changes: Any) -> LifecyclePolicy:
    authorize(by, bank.bank_id, "admin")
    unknown = set(changes) - set(POLICY_FIELDS)
    if unknown:
        raise InvalidInput(f"unknown policy field (use {', '.join(POLICY_FIELDS)})", field=sorted(unknown)[0])
    row = LifecyclePolicy.objects.filter(bank=bank).first() or LifecyclePolicy(bank=bank)
    merged = {name: changes.get(name, getattr(row, name)) for name in POLICY_FIELDS}
    if not isinstance(merged["enabled"], bool):
        raise InvalidInput("must be true or false", field="enabled")
    try:
        checked = policy_from(delete_after_days=merged["delete_after_days"],
                              archive_after_days=merged["archive_after_days"],
                              fact_type_overrides=merged["fact_type_overrides"], exempt_tags=merged["exempt_tags"])
    except PolicyError as exc:
        raise InvalidInput(exc.reason, field=exc.field) from None
    row.enabled = merged["enabled"]
    row.delete_after_days, row.archive_after_days = checked.delete_after_days, checked.archive_after_days
    row.fact_type_overrides = {k: dict(v) for k, v in checked.fact_type_overrides.items()}
    row.exempt_tags = sorted(checked.exempt_tags)
    with transaction.atomic():
        row.save()
        audit_record(actor=actor, action="bank.lifecycle_policy", bank=bank, target_ids=[bank.bank_id],
                     details={name: getattr(row, name) for name in POLICY_FIELDS})
    return row


def _sweep(bank: Bank, policy: Policy, actor: str, job: Job) -> LifecycleOutcome:
    outcome = LifecycleOutcome(job_id=job.pk)
    now = timezone.now()
    held = bank_under_hold(bank)
    total = Memory.objects.filter(bank=bank, forgotten_at__isnull=True).count()
    last_pk, done = 0, 0
    while True:
        rows = list(Memory.objects.filter(bank=bank, forgotten_at__isnull=True, pk__gt=last_pk).order_by("pk")
                    .values("pk", "memory_id", "created_at", "last_recalled_at", "fact_type", "tags",
                            "archived_at")[:CHUNK])
        if not rows:
            break
        last_pk = rows[-1]["pk"]
        plan: dict[str, list[str]] = {ARCHIVE: [], DELETE: [], KEEP: []}
        for row in rows:
            action, reason = decide(policy, now=now, created_at=row["created_at"],
                                    last_recalled_at=row["last_recalled_at"],
                                    fact_type=row["fact_type"], tags=row["tags"],
                                    archived=row["archived_at"] is not None, held=held)
            plan[action].append(row["memory_id"])
            if len(outcome.actions) < MAX_ACTIONS:
                outcome.actions.append({"memory_id": row["memory_id"], "action": action, "reason": reason})
            else:
                outcome.actions_truncated = True
        if plan[ARCHIVE]:
            outcome.archived_count += len(memories_archive(
                bank=bank, memory_ids=plan[ARCHIVE], actor=actor, reason="lifecycle policy"))
        if plan[DELETE]:
            outcome.deleted_count += memory_forget(bank=bank, actor=actor, memory_ids=plan[DELETE],
                                                   reason="lifecycle policy").deleted_count
        outcome.skipped_count += len(plan[KEEP])
        done += len(rows)
        job_progress(job=job, done=done, total=total, counts=_counts(outcome))
    return outcome


def _counts(outcome: LifecycleOutcome) -> dict[str, int]:
    return {"archived": outcome.archived_count, "deleted": outcome.deleted_count, "kept": outcome.skipped_count}


def lifecycle_run(*, bank: Bank, actor: str, by: Principal | None = None) -> LifecycleOutcome:
    """Run the bank's policy now, recorded as a finished (or failed) job. No policy: nothing to do.
    Needs ``admin``."""
    authorize(by, bank.bank_id, "admin")
    row = LifecyclePolicy.objects.filter(bank=bank).first()
    job = job_start(job=job_create(kind="lifecycle", actor=actor, bank=bank,
                                   params={"policy": row is not None and row.enabled}))
    if row is None or not row.enabled:
        job_finish(job=job, counts={"archived": 0, "deleted": 0, "kept": 0},
                   message="no enabled lifecycle policy: nothing to do")
        return LifecycleOutcome(job_id=job.pk)
    try:
        with job_pulse(job.pk):
            outcome = _sweep(bank, _policy(row), actor, job)
    except JobCancelled:
        job_fail(job=job, message="cancelled by an operator", cancelled=True)
        raise
    except Exception as exc:
        if job_stopped_cleanly(job, exc):
            job_fail(job=job, message="cancelled by an operator", cancelled=True)
            raise JobCancelled from exc
        job_fail(job=job, message=f"{exc.__class__.__name__}: {exc}")
        raise
    LifecyclePolicy.objects.filter(pk=row.pk).update(last_run_at=timezone.now())
    job_finish(job=job, counts=_counts(outcome), result={**_counts(outcome), "actions_truncated":
                                                          outcome.actions_truncated})
    return outcome


def lifecycle_run_all(*, actor: str = "system:lifecycle") -> list[int]:
    """The periodic sweep: every bank with an enabled policy, one job each. Returns the job ids."""
    jobs = []
    for bank in Bank.objects.active().filter(lifecycle_policy__enabled=True).order_by("bank_id"):
        try:
            jobs.append(lifecycle_run(bank=bank, actor=actor).job_id)
        except Exception:  # one bank's failure (recorded on its job) must not stop the sweep
            logger.exception("lifecycle run failed for bank %s", bank.bank_id)
    return [j for j in jobs if j is not None]


__all__ = ["LifecycleOutcome", "lifecycle_policy_set", "lifecycle_run", "lifecycle_run_all"]
