"""What a dry run counts beyond the rows: the links, entity links and forgotten or archived records the
run will make of the records it would store, counted the way the run's batch writer makes them.

Reads only. Memory links whose other end comes later in the archive wait here by target id (as the
run's pending links wait in their table) and count when that end would be stored."""

from __future__ import annotations

from banks.models import Bank, EntityLink, Memory
from banks.selectors.holds import bank_under_hold
from portability.records import MemoryRecord
from portability.services.import_graph import entity_key

LinkKey = tuple[str, str, str]


class ImportPreview:
    def __init__(self, bank: Bank) -> None:
        self.bank = bank
        self.held = not bank.is_never_written and bank_under_hold(bank)
        self.stored: set[str] = set()
        self.waiting: dict[str, set[LinkKey]] = {}
        self.linked: set[LinkKey] = set()
        self.entity_links: set[tuple[str, str, str]] = set()

    def store(self, records: list[MemoryRecord]) -> dict[str, int]:
        """The counts the run would add for this batch's stored ``records``."""
        counts = {"links": 0, "entity_links": 0, "forgotten": 0, "archived": 0}
        ids = [record.memory_id or "" for record in records]
        self.stored.update(ids)
        targets = {link.target_id[:255] for record in records for link in record.links}
        present = self._in_bank(targets - self.stored)
        for record in records:
            source = record.memory_id or ""
            for link in record.links:
                key = (source, link.target_id[:255], link.link_type[:64])
                if key in self.linked:
                    continue
                if key[1] in self.stored or key[1] in present:
                    self.linked.add(key)
                    counts["links"] += 1
                else:
                    self.waiting.setdefault(key[1], set()).add(key)
            if record.forgotten:
                counts["archived" if self.held else "forgotten"] += 1
        for memory_id in ids:
            for key in self.waiting.pop(memory_id, set()) - self.linked:
                self.linked.add(key)
                counts["links"] += 1
        counts["entity_links"] = self._entity_links(records)
        return counts

    def unresolved(self) -> int:
        return sum(len(keys) for keys in self.waiting.values())

    def _in_bank(self, memory_ids: set[str]) -> set[str]:
        if not memory_ids or self.bank.is_never_written:
            return set()
        return set(Memory.objects.filter(bank=self.bank, memory_id__in=list(memory_ids))
                   .values_list("memory_id", flat=True))

    def _entity_links(self, records: list[MemoryRecord]) -> int:
        wanted = {(entity_key(link.source), entity_key(link.target), link.link_type[:64])
                  for record in records for link in record.entity_links
                  if link.source.name.strip() and link.target.name.strip()} - self.entity_links
        self.entity_links |= wanted
        if not wanted or self.bank.is_never_written:
            return len(wanted)
        existing = {(a, b, kind) for a, b, kind in EntityLink.objects.filter(
            bank=self.bank, entity_a__bank_id=self.bank.pk, entity_a__entity_id__in=[w[0] for w in wanted],
            entity_b__bank_id=self.bank.pk, entity_b__entity_id__in=[w[1] for w in wanted]).values_list(
            "entity_a__entity_id", "entity_b__entity_id", "link_type")}
        return len(wanted - existing)
