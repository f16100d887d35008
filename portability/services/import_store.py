"""One import batch's transaction: its new rows inserted, its overwrites written through the rows' owner
(``banks.services.memory_rows``), the mentions' counts moved once, links and the entity graph attached,
one audit event. ``portability.services.importer`` decides what each line becomes; this writes it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from banks.models import Bank, Memory
from banks.providers.embeddings import Embedder
from banks.services.audit import audit_record
from banks.services.bulk_memories import MemoryRow
from banks.services.entities import attach_entities_batch
from banks.services.memory_rows import mentions_count, mentions_take, row_overwrite, rows_insert
from portability.import_lines import ImportReport
from portability.records import MemoryRecord
from portability.services.import_graph import import_graph_apply
from portability.services.import_links import links_queue, links_resolve

# Every column an import decides: a new row and an overwritten one get the same values.
OVERWRITTEN_COLUMNS = ("text", "fact_type", "memory_layer", "tags", "metadata", "occurred_at", "created_at",
                       "source", "content_hash", "embedding", "embedding_model", "embedding_dims",
                       "updated_at")


@dataclass
class BatchOutcome:
    imported: int = 0
    overwritten: int = 0
    links: int = 0
    graph: dict[str, int] = field(default_factory=dict)
    refused: list[tuple[Any, str]] = field(default_factory=list)


class BatchStore:
    """The writing half of an importer (``_Importer``): what it needs of it, then how a batch is stored."""

    bank: Bank
    actor: str
    embedder: Embedder
    source_label: str
    report: ImportReport
    # A conversation turn's context, computed with its vector (by id() of the record).
    context_of: dict[int, str | None]

    def _memory(self, record: MemoryRecord, digest: str, vector: list[float] | str | None, now: Any) -> Memory:
        if isinstance(vector, str):
            vector = [float(x) for x in vector[1:-1].split(",")]
        return Memory(
            bank=self.bank, memory_id=record.memory_id or "", text=record.text, fact_type=record.fact_type or "world",
            memory_layer=record.memory_layer, tags=list(dict.fromkeys(record.tags)), metadata=record.metadata or {},
            occurred_at=record.occurred_at, retained_at=record.retained_at or now,
            created_at=record.created_at or record.occurred_at or now, source=record.source or self.source_label,
            content_hash=digest, embedding=vector, embedding_model=self.embedder.name if vector is not None else "",
            embedding_dims=self.embedder.dimensions if vector is not None else None, updated_at=now,
        )

    def _row(self, record: MemoryRecord, digest: str, vector: list[float] | str | None, now: Any) -> MemoryRow:
        return MemoryRow(
            memory_id=record.memory_id or "", text=record.text, fact_type=record.fact_type or "world",
            memory_layer=record.memory_layer, tags=list(dict.fromkeys(record.tags)), metadata=record.metadata or {},
            occurred_at=record.occurred_at, retained_at=record.retained_at or now,
            created_at=record.created_at or record.occurred_at or now,
            source=record.source or self.source_label, content_hash=digest, embedding=vector,
            # A deferred vector: no model or size yet, so no vector search takes the row for embedded.
            embedding_model=self.embedder.name if vector is not None else "",
            embedding_dims=self.embedder.dimensions if vector is not None else None,
            context=self.context_of.get(id(record)) if vector is not None else None,
        )

    def _insert(self, rows: list[MemoryRow]) -> dict[str, int]:
        """Insert ``rows``; return ``{memory_id: pk}`` of those that landed.

        A row whose id or live content another writer stored since the batch was
        classified is left out by the bulk writer (the caller reports it); the rest land.
        """
        return rows_insert(self.bank.pk, rows, timezone.now())

    def _overwrite(self, memory: Memory, pk: int, *, retained: bool) -> bool:
        # The text changed, so what it mentions did too: the owner drops the old mentions (and their
        # counts); the archive's (or extracted) entities are attached with the batch's. ``retained``:
        # the archive says when the memory was retained, and that is kept, as for a new row; a record
        # without it keeps the row's own time rather than taking the import's.
        columns = (*OVERWRITTEN_COLUMNS, "retained_at") if retained else OVERWRITTEN_COLUMNS
        return row_overwrite(self.bank, pk, {name: getattr(memory, name) for name in columns}, mentions=False)

    def _store(self, new_rows: list[tuple[MemoryRecord, str]], overwrite_rows: list[tuple[MemoryRecord, str, int]],
               vectors: list[list[float] | str | None], now: Any) -> BatchOutcome:
        """The batch's transaction; the report is only told once it committed."""
        outcome = BatchOutcome()
        with transaction.atomic():
            landed = self._insert([self._row(r, d, v, now) for (r, d), v in zip(new_rows, vectors, strict=False)])
            stored: list[tuple[MemoryRecord, int]] = []
            overwritten: list[int] = []
            for record, _ in new_rows:
                if record.memory_id in landed:
                    stored.append((record, landed[record.memory_id or ""]))
                else:
                    outcome.refused.append((record.position, "already stored by a concurrent writer"))
            # Rows locked in key order: two imports overwriting the same memories in other orders wait for
            # each other instead of deadlocking.
            for (record, digest, pk), vector in sorted(zip(overwrite_rows, vectors[len(new_rows):], strict=True),
                                                       key=lambda item: item[0][2]):
                if self._overwrite(self._memory(record, digest, vector, now), pk,
                                   retained=record.retained_at is not None):
                    stored.append((record, pk))
                    overwritten.append(pk)
                    outcome.overwritten += 1
                else:
                    outcome.refused.append((record.position, "not overwritten: another memory holds its content, "
                                                             "or it was forgotten meanwhile"))
            # The overwritten rows' old mentions go, the batch's mentions come, and every count moves in
            # one pass over the entity rows in id order.
            deltas = Counter(mentions_take(self.bank.pk, overwritten))
            deltas.update(attach_entities_batch(self.bank.pk, [
                (pk, [{"name": e.name, "entity_type": e.entity_type, "aliases": e.aliases} for e in record.entities])
                for record, pk in stored if record.entities], count=False))
            mentions_count(self.bank.pk, dict(deltas))
            links_queue(self.bank, [record for record, _ in stored])
            outcome.links = links_resolve(self.bank, [record.memory_id or "" for record, _ in stored])
            outcome.graph = import_graph_apply(self.bank, stored, actor=self.actor)
            audit_record(actor=self.actor, action="bank.import.batch", bank=self.bank,
                         target_ids=[record.memory_id or "" for record, _ in stored],
                         details={"source": self.source_label, "imported": len(landed),
                                  "overwritten": outcome.overwritten, "links": outcome.links,
                                  "through_line": self.report.lines})
        outcome.imported = len(landed)
        return outcome



__all__ = ["OVERWRITTEN_COLUMNS", "BatchOutcome", "BatchStore"]
