"""What an imported record says beyond its own row: that it was deleted in the source (it is stored,
then forgotten, so its history survives and recall never sees it) and knowledge-graph edges between
entities (created with both ends when either is missing, idempotently: a re-run adds nothing).

A bank under legal hold forgets nothing but by a compliance erase, and an import may overwrite a live
memory with a deleted one: there such records are archived instead (out of recall, kept, restorable)."""

from __future__ import annotations

from collections.abc import Iterable

from banks.models import Bank, Entity, EntityLink
from banks.selectors.holds import bank_under_hold
from banks.services.memory_rows import rows_archive, rows_forget
from portability.records import EntityRecord, MemoryRecord


def entity_key(entity: EntityRecord) -> str:
    # The same key ``attach_entities`` gives a named entity, so mentions and graph edges meet.
    return entity.name.strip().lower()[:255]


def entity_links_create(bank: Bank, records: Iterable[MemoryRecord]) -> int:
    wanted = [link for record in records for link in record.entity_links
              if link.source.name.strip() and link.target.name.strip()]
    if not wanted:
        return 0
    ends = {entity_key(e): e for link in wanted for e in (link.source, link.target)}
    Entity.objects.bulk_create([Entity(bank=bank, entity_id=key, name=e.name.strip()[:500],
                                       entity_type=(e.entity_type or "OTHER")[:64], aliases=list(e.aliases))
                                for key, e in ends.items()], ignore_conflicts=True)
    pks = dict(Entity.objects.filter(bank=bank, entity_id__in=list(ends)).values_list("entity_id", "pk"))
    rows = {(pks[entity_key(link.source)], pks[entity_key(link.target)], link.link_type[:64]): link
            for link in wanted if entity_key(link.source) in pks and entity_key(link.target) in pks}
    created = EntityLink.objects.bulk_create(
        [EntityLink(bank=bank, entity_a_id=a, entity_b_id=b, link_type=kind, confidence=link.confidence,
                    metadata=link.metadata or None) for (a, b, kind), link in rows.items()], ignore_conflicts=True)
    return len(created)


def records_forget(bank: Bank, stored: Iterable[tuple[MemoryRecord, int]], *, actor: str) -> dict[str, int]:
    """Forget (archive, under a hold) the records deleted in the source; the rows' owner records it."""
    pks = [pk for record, pk in stored if record.forgotten]
    if not pks:
        return {"forgotten": 0, "archived": 0}
    if bank_under_hold(bank):
        return {"forgotten": 0, "archived": len(rows_archive(
            bank, pks=pks, actor=actor, reason="deleted in the imported archive; archived: the bank is under legal hold"))}
    return {"forgotten": len(rows_forget(bank, pks=pks, actor=actor, reason="deleted in the imported archive")),
            "archived": 0}


def import_graph_apply(bank: Bank, stored: list[tuple[MemoryRecord, int]], *, actor: str) -> dict[str, int]:
    """Called inside each import batch's transaction with the records that landed and their keys."""
    return {**records_forget(bank, stored, actor=actor),
            "entity_links": entity_links_create(bank, [r for r, _ in stored])}
