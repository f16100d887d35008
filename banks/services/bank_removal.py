"""Removing a bank's rows, a chunk at a time, in short transactions.

The bank is first hidden (``deleted_at``): from then on no route finds it and nothing new can be
written to it. Its rows then go in chunks of ``CHUNK``, each chunk its own transaction, so a
million-memory bank never holds locks for long, never sits in memory at once, and other banks are
never stalled. A small bank is removed inside the request; a big one by a job on the worker
(``bank_delete`` jobs), whose progress counts memories. A deletion whose worker died is taken up
again by the periodic job sweep (``bank_deletions_resume``): the work left is whatever rows remain.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Model, QuerySet
from django.utils import timezone

from banks.models import (
    AuditEvent,
    Bank,
    BankLexeme,
    DuplicatePair,
    Entity,
    EntityLink,
    Job,
    JobState,
    MemoryLink,
    MentalModel,
    Observation,
    WebhookDelivery,
    WikiPage,
)
from banks.models.bank_scoped import bank_rows_delete
from banks.services.access_log import access_log_drop_bank
from banks.services.audit import audit_record
from banks.services.jobs import JobCancelled, job_create, job_enqueue, job_is_stale, job_progress
from banks.services.tag_indexes import bank_tag_indexes_drop
from banks.signals import bank_hidden
from memoryhub.queue import send_task

KIND = "bank_delete"
CHUNK = 1000


def sync_limit() -> int:
    """Banks with at most this many memories are deleted inside the request."""
    return int(getattr(settings, "MEMORYHUB_BANK_DELETE_SYNC_MEMORIES", 5000))


def bank_hide(bank: Bank) -> None:
    now = timezone.now()
    Bank.objects.filter(pk=bank.pk).update(deleted_at=now)
    bank.deleted_at = now
    # Its files go with it, at once (a new bank of the same id may be made before the rows are gone):
    # portability sets them aside in a dated trash folder of each root on this signal, never left for
    # the next bank of that id to find.
    bank_id = bank.bank_id
    transaction.on_commit(lambda: bank_hidden.send(sender=Bank, bank_id=bank_id, at=now))


def bank_removal_start(*, bank: Bank, actor: str, reason: str, memory_count: int) -> Job:
    job = job_create(kind=KIND, actor=actor, bank=bank, total=memory_count,
                     params={"bank_id": bank.bank_id, "reason": reason, "memory_count": memory_count})
    return job_enqueue(job=job, send=lambda: send_task("banks.remove_bank", job.pk))


def _chunks(queryset: QuerySet[Model], bank: Bank | None, on_chunk: Callable[[int], None] | None = None) -> int:
    """Delete ``queryset`` CHUNK rows per transaction (cascades included); return how many went. Rows of
    ``bank`` go by statements that name it, cascades included (banks.models.bank_scoped)."""
    model = queryset.model
    removed = 0
    while True:
        with transaction.atomic():
            # No ORDER BY: the next rows the index yields, without sorting what is left of the bank.
            pks = list(queryset.values_list("pk", flat=True)[:CHUNK])
            if not pks:
                return removed
            if bank is not None:
                bank_rows_delete(model, bank.pk, pks)
            else:
                model._default_manager.filter(pk__in=pks).delete()
        removed += len(pks)
        if on_chunk is not None:
            on_chunk(removed)


def _detach_audit(bank: Bank) -> int:
    """The bank's audit events outlive it (they keep ``bank_ref``): unlinked a chunk at a time rather
    than by the final cascade, which would rewrite every one of them in one transaction."""
    detached = 0
    while True:
        pks = list(AuditEvent.objects.filter(bank=bank).values_list("pk", flat=True)[:CHUNK * 5])
        if not pks:
            return detached
        detached += AuditEvent.objects.filter(pk__in=pks).update(bank=None)


def bank_remove_rows(*, bank: Bank, actor: str, reason: str = "",
                     progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Delete everything of a (hidden) bank, then the bank row; returns the counts removed."""
    counts = {
        # Its tags' vector indexes first: no vacuum of the deleted rows has to tidy them.
        "tag_indexes": bank_tag_indexes_drop(bank.pk),
        # Rows that point at memories first, so each memory chunk cascades into little.
        "duplicate_pairs": _chunks(DuplicatePair.objects.filter(bank=bank), bank),
        "memory_links": _chunks(MemoryLink.objects.filter(bank=bank), bank),
        "memories": _chunks(bank.memories.all(), bank, progress),
        "entity_links": _chunks(EntityLink.objects.filter(bank=bank), bank),
        "entities": _chunks(Entity.objects.filter(bank=bank), bank),
        "observations": _chunks(Observation.objects.filter(bank=bank), bank),
        "mental_models": _chunks(MentalModel.objects.filter(bank=bank), bank),
        "wiki_pages": _chunks(WikiPage.objects.filter(bank=bank), bank),
        "lexemes": _chunks(BankLexeme.objects.filter(bank=bank), bank),
        # Delivery logs hang off a webhook source (kept on the coordinator), not the bank's shard.
        "webhook_deliveries": _chunks(WebhookDelivery.objects.filter(source__bank=bank), None),
        "access_log": access_log_drop_bank(bank.pk),
        "audit_events_kept": _detach_audit(bank),
    }
    with transaction.atomic():
        audit_record(actor=actor, action="bank.delete", bank=None, bank_ref=bank.bank_id, target_ids=[bank.bank_id],
                     reason=reason, details={"bank_id": bank.bank_id, "memory_count": counts["memories"],
                                             "deleted_at": timezone.now().isoformat(), "counts": counts})
        # What is left is small (memberships, holds, policy, webhook sources): one cascade.
        Bank.objects.filter(pk=bank.pk).delete()
    # Its own vector index, if an import gave it one (read no flag: this object may predate that).
    from banks.services.vector_indexes import bank_vector_index_forget

    bank_vector_index_forget(bank.pk)
    return counts


def bank_removal_run(job: Job) -> dict[str, int]:
    """The worker's side of a ``bank_delete`` job. A cancel request cannot stop a deletion half-way
    (the bank is already gone for every client), so it is noted and the deletion goes on."""
    bank = Bank.objects.filter(pk=job.bank_id).first() if job.bank_id else None
    if bank is None:
        return {"memories": 0}
    total = int(job.params.get("memory_count") or 0)

    def progress(done: int) -> None:
        try:
            job_progress(job=job, done=done, total=max(total, done))
        except JobCancelled:
            pass

    return bank_remove_rows(bank=bank, actor=job.created_by or "worker", reason=job.params.get("reason", ""),
                            progress=progress)


def bank_deletions_resume() -> int:
    """Start again the deletions whose job died (the periodic job sweep calls this); returns how many."""
    resumed = 0
    for bank in Bank.objects.filter(deleted_at__isnull=False, deleted_at__lt=timezone.now() - timedelta(minutes=1)):
        jobs = Job.objects.filter(bank=bank, kind=KIND)
        if any(j.state == JobState.QUEUED or (j.state == JobState.RUNNING and not job_is_stale(j)) for j in jobs):
            continue
        bank_removal_start(bank=bank, actor="system", reason="resumed deletion",
                           memory_count=bank.memories.count())
        resumed += 1
    return resumed


__all__ = ["CHUNK", "KIND", "bank_deletions_resume", "bank_hide", "bank_remove_rows", "bank_removal_run",
           "bank_removal_start", "sync_limit"]
