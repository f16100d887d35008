"""Re-extract the entities every memory of a bank mentions, with the bank's current provider.

Run after a provider change, or on a bank imported without extraction. Memories are taken in
primary-key order, a batch at a time: the provider is asked outside any transaction, then one
transaction per batch replaces the batch's mentions (old ones removed and their counters moved
down, new ones linked and counted up) with a fixed number of statements, whatever the batch size.
The caller's ``checkpoint`` runs inside that transaction with the last key done, so a resumed run
continues exactly after the last committed batch. Entity rows are locked in id order; a batch that
still loses a deadlock or lock timeout to a concurrent writer is written once more, and a second loss
is a ``409`` to retry (as an import batch). Forgotten memories are left alone; entities no
memory mentions any more are kept (links and metadata may hang on them) with a zero count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from django.db import transaction

from banks.models import Bank, Entity, Memory
from banks.providers.llm import get_llm
from banks.services.memory_rows import mentions_drop, mentions_link_pairs
from memoryhub.errors import once_more_on_lock_conflict

DEFAULT_BATCH = 200


@dataclass
class ReextractReport:
    memories: int = 0
    mentions_removed: int = 0
    mentions_added: int = 0
    entities_created: int = 0
    after_pk: int = 0

    def counts(self) -> dict[str, int]:
        return {"memories": self.memories, "mentions_removed": self.mentions_removed,
                "mentions_added": self.mentions_added, "entities_created": self.entities_created}


def _replace_mentions(bank: Bank, found: dict[int, list[tuple[str, str, str]]], report: ReextractReport) -> None:
    report.mentions_removed += mentions_drop(bank.pk, list(found))
    wanted = {key: (name, kind) for items in found.values() for key, name, kind in items}
    known = Entity.objects.filter(bank=bank, entity_id__in=list(wanted))
    existing = known.count()
    Entity.objects.bulk_create(
        [Entity(bank=bank, entity_id=key, name=name, entity_type=kind) for key, (name, kind) in wanted.items()],
        ignore_conflicts=True)
    by_key = dict(known.values_list("entity_id", "pk"))
    report.entities_created += len(by_key) - existing
    pairs = sorted({(memory_pk, by_key[key]) for memory_pk, items in found.items() for key, _, _ in items
                    if key in by_key})
    report.mentions_added += sum(mentions_link_pairs(bank.pk, pairs).values())


def _store(bank: Bank, found: dict[int, list[tuple[str, str, str]]], report: ReextractReport, last_pk: int,
           checkpoint: Callable[[ReextractReport], None] | None) -> ReextractReport:
    """One batch's transaction, counted on a copy of ``report`` that stands only once it committed (a
    batch that lost a deadlock to another writer of the same entities is written once more)."""
    batch = replace(report)
    with transaction.atomic():
        _replace_mentions(bank, found, batch)
        batch.memories += len(found)
        batch.after_pk = last_pk
        if checkpoint is not None:
            checkpoint(batch)
    return batch


def entities_reextract(*, bank: Bank, after_pk: int = 0, batch: int = DEFAULT_BATCH,
                       checkpoint: Callable[[ReextractReport], None] | None = None,
                       progress: Callable[[ReextractReport, int], None] | None = None,
                       alive: Callable[[], None] | None = None) -> ReextractReport:
    """Re-extract every unforgotten memory with a key above ``after_pk``; ``progress(report, total)``
    runs after each committed batch (it may raise to stop: what is committed stays). ``alive()`` runs
    after each provider answer: a remote provider may take minutes over one batch, and a job whose
    heartbeat stops that long would be taken for dead."""
    llm = get_llm()
    rows = Memory.objects.filter(bank=bank, forgotten_at__isnull=True)
    total = rows.count()
    report = ReextractReport(after_pk=after_pk, memories=rows.filter(pk__lte=after_pk).count())
    while True:
        memories = list(rows.filter(pk__gt=report.after_pk).order_by("pk").values_list("pk", "text")[:batch])
        if not memories:
            break
        found: dict[int, list[tuple[str, str, str]]] = {}
        for pk, text in memories:
            found[pk] = [(e.name.strip().lower()[:255], e.name.strip()[:500], (e.entity_type or "OTHER")[:64])
                         for e in llm.extract_entities(text) if e.name.strip()]
            if alive is not None:
                alive()
        report = once_more_on_lock_conflict(partial(_store, bank, found, report, memories[-1][0], checkpoint))
        if progress is not None:
            progress(report, total)
    return report


__all__ = ["DEFAULT_BATCH", "ReextractReport", "entities_reextract"]
