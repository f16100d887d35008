"""Test data built through the services that own it: banks by ``bank_create``, memories by
``memory_retain`` (entities attached and counted as a retain does), imports by ``archive_import``.
Seeds that write rows directly skip the owners' rules and hide exactly the bugs tests are for."""

from __future__ import annotations

from typing import Any

from banks.models import Bank, Entity, Memory, MemoryLink
from banks.services.banks import bank_create
from banks.services.memories import memory_retain
from portability.records import EntityRecord, MemoryRecord
from portability.services.importer import ImportReport, archive_import


def make_bank(bank_id: str = "user-alice", **kwargs: Any) -> Bank:
    return bank_create(bank_id=bank_id, actor="test", get_existing=True, **kwargs)


def make_memory(bank: Bank, text: str, *, entities: list[str] | None = None, **kwargs: Any) -> Memory:
    """A retained memory naming ``entities`` (by name; none extracted unless given)."""
    outcome = memory_retain(bank=bank, text=text, actor="test", near_dedup=kwargs.pop("near_dedup", False),
                            entities=[{"name": name} for name in entities or []], **kwargs)
    assert outcome.stored and outcome.memory is not None, outcome
    return outcome.memory


def make_import(bank: Bank, records: list[tuple[str, str, list[str]]], *, on_conflict: str = "skip",
                **kwargs: Any) -> ImportReport:
    """Import ``(memory_id, text, entity names)`` records as an archive would carry them."""
    def source() -> list[MemoryRecord]:
        return [MemoryRecord(memory_id=memory_id, text=text, entities=[EntityRecord(name=n) for n in names])
                for memory_id, text, names in records]

    return archive_import(bank=bank, records=source, actor="test", on_conflict=on_conflict,
                          extract_entities=False, **kwargs)


def make_link(source: Memory, target: Memory, link_type: str = "related") -> MemoryLink:
    """A link between two memories of one bank, as an import resolves it (no service writes one alone)."""
    return MemoryLink.objects.create(bank_id=source.bank_id, source=source, target=target, link_type=link_type)


def entity(bank: Bank, name: str) -> Entity:
    return Entity.objects.get(bank=bank, entity_id=name.lower())


_BREAKS = {
    "mention counts": "SELECT e.bank_id, e.entity_id, e.mention_count, count(me.id) FROM banks_entity e "
                      "LEFT JOIN banks_memoryentity me ON me.entity_id = e.id "
                      "GROUP BY e.bank_id, e.id HAVING e.mention_count <> count(me.id)",
    "mentions across banks": "SELECT me.id FROM banks_memoryentity me JOIN banks_memory m ON m.id = me.memory_id "
                             "JOIN banks_entity e ON e.id = me.entity_id "
                             "WHERE me.bank_id <> m.bank_id OR e.bank_id <> m.bank_id",
    "links across banks": "SELECT l.id FROM banks_memorylink l JOIN banks_memory s ON s.id = l.source_id "
                          "JOIN banks_memory t ON t.id = l.target_id WHERE s.bank_id <> l.bank_id "
                          "OR t.bank_id <> l.bank_id",
    "pairs across banks": "SELECT p.id FROM banks_duplicatepair p JOIN banks_memory a ON a.id = p.memory_a_id "
                          "JOIN banks_memory b ON b.id = p.memory_b_id WHERE a.bank_id <> p.bank_id "
                          "OR b.bank_id <> p.bank_id",
    "vector tier": "SELECT m.memory_id FROM banks_memory m JOIN banks_bank b ON b.id = m.bank_id "
                   "WHERE m.own_vector_index <> b.own_vector_index",
    "merge pointers across banks": "SELECT m.memory_id FROM banks_memory m JOIN banks_memory s "
                                   "ON s.id = m.merged_into_id WHERE s.bank_id <> m.bank_id",
}


def row_invariant_breaks() -> dict[str, list[tuple[Any, ...]]]:
    """Every bank's counters recomputed from scratch, and every row that sits across two banks: empty
    when the owner of memory rows kept its invariants."""
    from django.db import connection

    found: dict[str, list[tuple[Any, ...]]] = {}
    with connection.cursor() as cursor:
        for name, sql in _BREAKS.items():
            cursor.execute(sql)
            rows = cursor.fetchall()
            if rows:
                found[name] = rows
    return found


def count_embed_calls(monkeypatch: Any, embedder_class: type) -> list[list[str]]:
    """Every batch of texts ``embedder_class.embed`` is asked for from now on (the real embedding still runs)."""
    calls: list[list[str]] = []
    real = embedder_class.embed

    def counting(self: Any, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.append(list(texts))
        return real(self, texts, *args, **kwargs)

    monkeypatch.setattr(embedder_class, "embed", counting)
    return calls
