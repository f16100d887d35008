"""Import a stream of archive records into a bank, in batches, idempotently.

* ``memory_id`` decides conflicts within the bank: ``skip`` keeps what is there,
  ``overwrite`` replaces it, ``error`` reports the line and writes nothing for it.
* Content already in the bank (or earlier in the archive) is a duplicate: reported,
  not stored — the database constraint makes this hold under concurrency too.
* Each batch is one transaction, so a killed import leaves whole batches only, and
  re-running it skips what is already there instead of duplicating it.
* ``strict`` validates the whole archive first and writes nothing if any line is bad;
  ``dry_run`` classifies every line and writes nothing.
Memory use does not grow with the archive: only one batch is held at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from banks.content import content_hash, new_memory_id
from banks.models import Bank, Memory, MemoryLink
from banks.services.audit import audit_record
from banks.services.bulk_memories import MemoryRow, write_memory_rows
from banks.services.memories import attach_entities, bank_embedder
from memoryhub.errors import InvalidInput
from portability.records import MemoryRecord, RecordError, record_problem

ON_CONFLICT = ("skip", "overwrite", "error")
MAX_ERRORS_REPORTED = 1000
DEFAULT_BATCH = 500

RecordSource = Callable[[], Iterable[MemoryRecord | RecordError]]


@dataclass
class ImportReport:
    dry_run: bool = False
    strict: bool = False
    on_conflict: str = "skip"
    lines: int = 0
    imported: int = 0
    overwritten: int = 0
    skipped: int = 0
    duplicates: int = 0
    conflicts: int = 0
    invalid: int = 0
    links: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    aborted: str | None = None

    def note(self, position: Any, reason: str) -> None:
        if len(self.errors) < MAX_ERRORS_REPORTED:
            self.errors.append({"line": position, "reason": reason})

    def counts(self) -> dict[str, int]:
        return {"lines": self.lines, "imported": self.imported, "overwritten": self.overwritten,
                "skipped": self.skipped, "duplicates": self.duplicates, "conflicts": self.conflicts,
                "invalid": self.invalid, "links": self.links}

    def astrocyte_result(self) -> dict[str, int]:
        """Astrocyte's ImportResult numbers: stored, not stored, failed."""
        return {"imported": self.imported + self.overwritten, "skipped": self.skipped + self.duplicates,
                "errors": self.invalid + (self.conflicts if self.on_conflict == "error" else 0)}


def _batches(items: Iterable[MemoryRecord | RecordError], size: int) -> Iterator[list[MemoryRecord | RecordError]]:
    batch: list[MemoryRecord | RecordError] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Importer:
    def __init__(self, *, bank: Bank, actor: str, on_conflict: str, dry_run: bool, source_label: str,
                 report: ImportReport) -> None:
        self.bank, self.actor, self.on_conflict, self.dry_run = bank, actor, on_conflict, dry_run
        self.source_label, self.report = source_label, report
        self.embedder = bank_embedder(bank)
        # Only a dry run must remember hashes itself (nothing lands in the database to ask).
        self.dry_hashes: set[str] = set()
        self.dry_ids: set[str] = set()
        self.pending_links: list[tuple[str, str, str, float, dict[str, Any]]] = []

    def _vectors(self, records: list[MemoryRecord]) -> list[list[float]]:
        vectors: list[list[float] | None] = []
        missing: list[int] = []
        for i, record in enumerate(records):
            # An embedding in the archive is reused only when it comes from the bank's own model.
            if (record.embedding and record.embedding_model == self.embedder.name
                    and len(record.embedding) == self.embedder.dimensions):
                vectors.append(record.embedding)
            else:
                vectors.append(None)
                missing.append(i)
        if missing:
            fresh = self.embedder.embed([records[i].text for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                vectors[i] = vector
        return vectors  # type: ignore[return-value]

    def run_batch(self, batch: list[MemoryRecord | RecordError]) -> None:
        report = self.report
        records: list[MemoryRecord] = []
        for item in batch:
            report.lines += 1
            if isinstance(item, RecordError):
                report.invalid += 1
                report.note(item.position, item.reason)
            elif not item.text.strip():
                report.invalid += 1
                report.note(item.position, "empty text")
            elif (problem := record_problem(item)) is not None:
                report.invalid += 1
                report.note(item.position, problem)
            else:
                if not item.memory_id:
                    item.memory_id = new_memory_id()
                records.append(item)
        if not records:
            return
        hashes = [content_hash(r.text) for r in records]
        existing = {row["memory_id"]: row for row in Memory.objects.filter(
            bank=self.bank, memory_id__in=[r.memory_id for r in records]).values("pk", "memory_id", "content_hash")}
        live_hashes = dict(Memory.objects.live().filter(bank=self.bank, content_hash__in=hashes)
                           .values_list("content_hash", "memory_id"))
        new_rows: list[tuple[MemoryRecord, str]] = []
        overwrite_rows: list[tuple[MemoryRecord, str, int]] = []
        batch_hashes: dict[str, str] = {}
        batch_ids: set[str] = set()
        for record, digest in zip(records, hashes, strict=True):
            memory_id = record.memory_id or ""
            if memory_id in existing or memory_id in batch_ids or (self.dry_run and memory_id in self.dry_ids):
                report.conflicts += 1
                if self.on_conflict == "skip":
                    report.skipped += 1
                    continue
                if self.on_conflict == "error" or memory_id not in existing:
                    report.note(record.position, f"memory_id '{memory_id}' already exists")
                    continue
                holder = live_hashes.get(digest) or batch_hashes.get(digest)
                if holder and holder != memory_id:
                    report.duplicates += 1
                    report.note(record.position, f"duplicate content of memory '{holder}'")
                    continue
                overwrite_rows.append((record, digest, existing[memory_id]["pk"]))
                batch_hashes[digest] = memory_id
                continue
            holder = live_hashes.get(digest) or batch_hashes.get(digest) or (
                "an earlier line" if self.dry_run and digest in self.dry_hashes else None)
            if holder:
                report.duplicates += 1
                report.note(record.position, f"duplicate content of memory '{holder}'")
                continue
            batch_hashes[digest] = memory_id
            batch_ids.add(memory_id)
            new_rows.append((record, digest))
        if self.dry_run:
            report.imported += len(new_rows)
            report.overwritten += len(overwrite_rows)
            self.dry_hashes.update(batch_hashes)
            self.dry_ids.update(batch_ids)
            return
        self._write(new_rows, overwrite_rows)

    def _memory(self, record: MemoryRecord, digest: str, vector: list[float], now: Any) -> Memory:
        return Memory(
            bank=self.bank, memory_id=record.memory_id, text=record.text, fact_type=record.fact_type or "world",
            memory_layer=record.memory_layer, tags=list(dict.fromkeys(record.tags)), metadata=record.metadata or {},
            occurred_at=record.occurred_at, retained_at=now,
            created_at=record.created_at or record.occurred_at or now, source=record.source or self.source_label,
            content_hash=digest, embedding=vector, embedding_model=self.embedder.name,
            embedding_dims=self.embedder.dimensions,
        )

    def _row(self, record: MemoryRecord, digest: str, vector: list[float], now: Any) -> MemoryRow:
        return MemoryRow(
            memory_id=record.memory_id or "", text=record.text, fact_type=record.fact_type or "world",
            memory_layer=record.memory_layer, tags=list(dict.fromkeys(record.tags)), metadata=record.metadata or {},
            occurred_at=record.occurred_at, retained_at=now, created_at=record.created_at or record.occurred_at or now,
            source=record.source or self.source_label, content_hash=digest, embedding=vector,
            embedding_model=self.embedder.name, embedding_dims=self.embedder.dimensions,
        )

    def _write(self, new_rows: list[tuple[MemoryRecord, str]],
               overwrite_rows: list[tuple[MemoryRecord, str, int]]) -> None:
        now = timezone.now()
        vectors = self._vectors([r for r, _ in new_rows] + [r for r, _, _ in overwrite_rows])
        try:
            with transaction.atomic():
                landed = write_memory_rows(
                    self.bank.pk, [self._row(r, d, v, now) for (r, d), v in zip(new_rows, vectors, strict=False)],
                    now)
                for (record, digest, pk), vector in zip(overwrite_rows, vectors[len(new_rows):], strict=True):
                    row = self._memory(record, digest, vector, now)
                    Memory.objects.filter(pk=pk).update(
                        text=row.text, fact_type=row.fact_type, memory_layer=row.memory_layer, tags=row.tags,
                        metadata=row.metadata, occurred_at=row.occurred_at, created_at=row.created_at,
                        source=row.source, content_hash=digest, embedding=vector, embedding_model=row.embedding_model,
                        embedding_dims=row.embedding_dims, archived_at=None, forgotten_at=None, updated_at=now)
                for record, _ in new_rows:
                    if record.memory_id not in landed:
                        continue
                    if record.entities:
                        attach_entities(Memory(pk=landed[record.memory_id], bank=self.bank), [
                            {"name": e.name, "entity_type": e.entity_type, "aliases": e.aliases}
                            for e in record.entities])
                    for link in record.links:
                        self.pending_links.append((record.memory_id or "", link.target_id, link.link_type,
                                                   link.confidence, link.metadata))
        except IntegrityError:
            # Someone stored the same content or id meanwhile: fall back to one row at a time.
            for row in new_rows:
                self._write_one(row)
            for row in overwrite_rows:
                self._overwrite_one(row)
            return
        self.report.imported += len(landed)
        for record, _ in new_rows:
            if record.memory_id not in landed:
                # Another writer stored the same id or content between our check and this batch.
                self.report.duplicates += 1
                self.report.note(record.position, "already stored by a concurrent writer")
        self.report.overwritten += len(overwrite_rows)

    def _write_one(self, row: tuple[MemoryRecord, str]) -> None:
        record, digest = row
        try:
            with transaction.atomic():
                Memory.objects.bulk_create([self._memory(record, digest, self._vectors([record])[0], timezone.now())])
            self.report.imported += 1
        except IntegrityError:
            self.report.duplicates += 1
            self.report.note(record.position, "already stored by a concurrent writer")

    def _overwrite_one(self, row: tuple[MemoryRecord, str, int]) -> None:
        record, digest, pk = row
        try:
            with transaction.atomic():
                fresh = self._memory(record, digest, self._vectors([record])[0], timezone.now())
                Memory.objects.filter(pk=pk).update(
                    text=fresh.text, tags=fresh.tags, metadata=fresh.metadata, fact_type=fresh.fact_type,
                    content_hash=digest, embedding=fresh.embedding, archived_at=None, forgotten_at=None)
            self.report.overwritten += 1
        except IntegrityError:
            self.report.duplicates += 1
            self.report.note(record.position, "its content is already stored under another memory")

    def resolve_links(self) -> None:
        if self.dry_run or not self.pending_links:
            return
        ids = {s for s, *_ in self.pending_links} | {t for _, t, *_ in self.pending_links}
        pks = dict(Memory.objects.filter(bank=self.bank, memory_id__in=ids).values_list("memory_id", "pk"))
        rows = [MemoryLink(bank=self.bank, source_id=pks[s], target_id=pks[t], link_type=kind[:64], confidence=conf,
                           metadata=meta or {})
                for s, t, kind, conf, meta in self.pending_links if s in pks and t in pks]
        MemoryLink.objects.bulk_create(rows, ignore_conflicts=True)
        self.report.links = len(rows)


def archive_import(
    *,
    bank: Bank,
    records: RecordSource,
    actor: str,
    on_conflict: str = "skip",
    dry_run: bool = False,
    strict: bool = False,
    batch_size: int = DEFAULT_BATCH,
    source_label: str = "import",
    progress: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    """``records`` is a callable returning a fresh iterator (strict mode reads the archive twice)."""
    if on_conflict not in ON_CONFLICT:
        raise InvalidInput(f"must be one of {', '.join(ON_CONFLICT)}", field="on_conflict")
    report = ImportReport(dry_run=dry_run, strict=strict, on_conflict=on_conflict)
    if strict and not dry_run:
        check = ImportReport()
        for item in records():
            check.lines += 1
            if isinstance(item, RecordError):
                check.invalid += 1
                check.note(item.position, item.reason)
        if check.invalid:
            report.lines, report.invalid, report.errors = check.lines, check.invalid, check.errors
            report.aborted = f"strict mode: {check.invalid} bad line(s), nothing was written"
            return report
    importer = _Importer(bank=bank, actor=actor, on_conflict=on_conflict, dry_run=dry_run,
                         source_label=source_label, report=report)
    for batch in _batches(records(), batch_size):
        importer.run_batch(batch)
        if progress:
            progress(report)
    importer.resolve_links()
    # Bad lines are found while reading, duplicates while classifying: report them in file order.
    report.errors.sort(key=lambda e: (0, e["line"], "") if isinstance(e["line"], int) else (1, 0, str(e["line"])))
    if not dry_run:
        audit_record(actor=actor, action="bank.import", bank=bank, details={"counts": report.counts(),
                                                                               "on_conflict": on_conflict,
                                                                               "source": source_label})
    return report
