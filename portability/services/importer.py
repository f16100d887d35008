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

A line's rules and the report are ``portability.import_lines`` (pure); how batches are read and
embedded, ``import_batches``; one batch's transaction, ``import_store``; this module decides what each
line becomes and runs the import's phases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from banks.content import content_hash, new_memory_id
from banks.models import Bank, Observation
from banks.providers import bank_embedder
from banks.providers.embeddings import embedder_available
from banks.providers.llm import get_llm
from banks.services.audit import audit_record
from banks.services.banks import bank_embedder_pin
from banks.services.bulk_memories import memory_statistics_refresh
from banks.services.memory_rows import (
    TurnContextsAhead,
)
from banks.services.observations import observation_import
from banks.services.text_statistics import bank_lexemes_after_load
from banks.services.vector_fill import bank_vectors_fill, defer_vectors
from banks.services.vector_indexes import bank_loading, bank_vector_index_build, bank_vector_index_prepare
from banks.turn_context import embedding_text
from memoryhub.errors import InvalidInput, once_more_on_lock_conflict
from portability.import_lines import ON_CONFLICT, ImportReport, line_problem, strict_check
from portability.observation_records import is_observation, observation_fields
from portability.records import EntityRecord, MemoryRecord, RecordError, RecordSkipped
from portability.services.import_batches import after, batches, load
from portability.services.import_links import links_unresolved
from portability.services.import_preview import ImportPreview
from portability.services.import_store import BatchStore
from portability.vector_text import VectorText

DEFAULT_BATCH = 500
RecordSource = Callable[[], Iterable[MemoryRecord | RecordError]]


def _stored(bank: Bank, memory_ids: list[str], hashes: list[str]) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Of a batch: the bank's rows holding its ids (by id), and the live ids holding its hashes (by hash).

    Each list goes as one array parameter: a thousand-item IN list cost more Python to bind than the
    query cost PostgreSQL."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, memory_id, content_hash, forgotten_at IS NOT NULL FROM banks_memory "
                       "WHERE bank_id = %s AND memory_id = ANY(%s::varchar[])", [bank.pk, memory_ids])
        existing = {memory_id: {"pk": pk, "memory_id": memory_id, "content_hash": digest, "tombstone": tombstone}
                    for pk, memory_id, digest, tombstone in cursor.fetchall()}
        cursor.execute("SELECT content_hash, memory_id FROM banks_memory WHERE bank_id = %s "
                       "AND content_hash = ANY(%s::varchar[]) AND archived_at IS NULL AND forgotten_at IS NULL",
                       [bank.pk, hashes])
        live = dict(cursor.fetchall())
    return existing, live


# Memories an import stores before it first refreshes the planner's statistics (then at each doubling).
STATISTICS_FIRST = 5000


class _Importer(BatchStore):
    def __init__(self, *, bank: Bank, actor: str, on_conflict: str, dry_run: bool, source_label: str,
                 report: ImportReport, extract_entities: bool = True) -> None:
        self.bank, self.actor, self.on_conflict, self.dry_run = bank, actor, on_conflict, dry_run
        self.source_label, self.report = source_label, report
        self.embedder = bank_embedder(bank)
        # Only a dry run must remember hashes itself (nothing lands in the database to ask).
        # Content hash -> the memory id that would hold it (named in a duplicate's error, as the run names it).
        self.dry_hashes: dict[str, str] = {}
        self.dry_ids: set[str] = set()
        self.preview = ImportPreview(bank)
        self.extract = extract_entities
        # Ids seen in this archive (as 64-bit digests, so a huge archive stays cheap): a repeat is reported.
        self.seen_ids: dict[int, Any] = {}
        # Vector literals the embedding workers computed for the current batch, by id() of the record.
        self.ready: dict[int, str] = {}
        # Conversation turns' contexts, computed before their vectors (each turn embedded once, with it).
        self.contexts: TurnContextsAhead | None = None
        self.context_of: dict[int, str | None] = {}
        # Store memories without the vectors they lack (filled in after the load: banks.services.vector_fill).
        self.defer = False
        # Big enough for the embedding workers (and, usually, for the bank's own vector index).
        self.big = False
        # Memories this import had stored when it last refreshed the planner's statistics.
        self.analyzed_at = 0

    def _reusable(self, record: MemoryRecord) -> bool:
        # An embedding in the archive is reused only when it comes from the bank's own model.
        return bool(record.embedding and record.embedding_model == self.embedder.name
                    and len(record.embedding) == self.embedder.dimensions)

    def to_embed(self, batch: list[MemoryRecord | RecordError]) -> list[MemoryRecord]:
        """The records of ``batch`` that will need a fresh vector if they are stored."""
        if self.dry_run or self.defer:
            return []
        records = [r for r in batch if isinstance(r, MemoryRecord) and r.text.strip()]
        self.contexts = self.contexts or TurnContextsAhead(self.bank)
        # Every record moves its session along; only those embedded here keep theirs (a reused vector
        # is made again with its context by the insert's refresh).
        contexts = self.contexts.contexts([(r.text, r.metadata or {}, r.created_at or r.occurred_at or timezone.now(),
                                            r.occurred_at) for r in records])
        todo = [r for r in records if not self._reusable(r)]
        self.context_of.update({id(r): c for r, c in zip(records, contexts, strict=True) if c and not self._reusable(r)})
        return todo

    def vector_text(self, record: MemoryRecord) -> str:
        """What ``record``'s vector is made from: its text, and its context when it is a conversation turn."""
        return embedding_text(record.text, self.context_of.get(id(record)))

    def _vectors(self, records: list[MemoryRecord]) -> list[list[float] | str | None]:
        vectors: list[list[float] | str | None] = []
        missing: list[int] = []
        for i, record in enumerate(records):
            if self._reusable(record):
                # As it arrived, when it was kept as its text: pgvector reads that text itself.
                vectors.append(record.embedding.text if isinstance(record.embedding, VectorText) else record.embedding)
            elif (literal := self.ready.get(id(record))) is not None:
                vectors.append(literal)
            else:
                vectors.append(None)
                missing.append(i)
        if missing and not self.defer:
            fresh = self.embedder.embed([self.vector_text(records[i]) for i in missing])
            for i, vector in zip(missing, fresh, strict=True):
                vectors[i] = vector
        return vectors

    def run_batch(self, batch: list[MemoryRecord | RecordError]) -> None:
        report = self.report
        records: list[MemoryRecord] = []
        observations: list[MemoryRecord] = []
        for item in batch:
            report.lines += 1
            if isinstance(item, RecordSkipped):
                report.skipped += 1
                report.note(item.position, item.reason)
                continue
            problem = line_problem(item, self.seen_ids)
            if problem is not None:
                report.invalid += 1
                report.note(item.position, problem)
            else:
                assert isinstance(item, MemoryRecord)
                if not item.memory_id:
                    item.memory_id = new_memory_id()
                (observations if is_observation(item) else records).append(item)
        if records:
            self._memories(records)
        # After the batch's memories: an observation's evidence points at them.
        for record in observations:
            self._observation(record)
        for item in batch:
            self.context_of.pop(id(item), None)

    def _observation(self, record: MemoryRecord) -> None:
        report, fields = self.report, observation_fields(record)
        if self.dry_run:
            exists = Observation.objects.filter(bank=self.bank, observation_id=fields["observation_id"]).exists() \
                or fields["observation_id"] in self.dry_ids
            self.dry_ids.add(fields["observation_id"])
        else:
            try:
                exists = observation_import(bank=self.bank, actor=self.actor, **fields) is None
            except InvalidInput as exc:
                report.invalid += 1
                report.note(record.position, f"observation: {exc.message}")
                return
        if exists:
            report.conflicts += 1
            report.skipped += 1
        else:
            report.observations += 1

    def _memories(self, records: list[MemoryRecord]) -> None:
        report = self.report
        self._statistics_keep_up()
        hashes = [content_hash(r.text) for r in records]
        existing, live_hashes = _stored(self.bank, [r.memory_id or "" for r in records], hashes)
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
                if existing[memory_id]["tombstone"]:
                    # Forgotten (or erased) on purpose: an archive does not bring its text back.
                    report.note(record.position, f"memory '{memory_id}' was forgotten: a tombstone is not overwritten")
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
                self.dry_hashes.get(digest) if self.dry_run else None)
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
            # What the run's batch writer would make of them: links, entity links, forgotten (a preview equals its run).
            graph = self.preview.store([r for r, _ in new_rows] + [r for r, _, _ in overwrite_rows])
            for name, value in graph.items():
                setattr(report, name, getattr(report, name) + value)
            return
        self._write(new_rows, overwrite_rows)

    def _statistics_keep_up(self) -> None:
        """Refresh the planner's statistics each time the import has doubled what it stored.

        The statistics of a bank that is new or was small say it holds a handful of rows, so the
        planner answers a batch's lookups (ids, hashes, links) by walking every row of the bank through
        any index that starts with bank_id, filtering as it goes: 31 ms per batch at 100k rows, growing
        with the bank, so an import slowed as it went. Autovacuum corrects the statistics eventually;
        this takes eight ANALYZEs (a sample, about a second each) on the way to a million. Not inside a caller's
        transaction, whose ANALYZE lock would last until it commits.
        """
        if self.dry_run or connection.in_atomic_block:
            return
        if self.report.imported >= max(STATISTICS_FIRST, 2 * self.analyzed_at):
            memory_statistics_refresh()
            self.analyzed_at = self.report.imported

    def _entities(self, records: list[MemoryRecord]) -> None:
        """Records that carry no entities get them from the bank's provider, as a retain would."""
        if not self.extract:
            return
        llm = get_llm()
        for record in records:
            if not record.entities:
                record.entities = [EntityRecord(name=e.name, entity_type=e.entity_type)
                                   for e in llm.extract_entities(record.text)]

    def _write(self, new_rows: list[tuple[MemoryRecord, str]],
               overwrite_rows: list[tuple[MemoryRecord, str, int]]) -> None:
        """One code path for every batch: embed and extract first, then one transaction per batch.

        A batch that loses a deadlock or a lock timeout to a concurrent writer rolled back whole: it is
        written once more, and a second loss is the caller's ``409`` (retry), never a lost batch."""
        now = timezone.now()
        everything = [r for r, _ in new_rows] + [r for r, _, _ in overwrite_rows]
        vectors = self._vectors(everything)
        self._entities(everything)
        outcome = once_more_on_lock_conflict(lambda: self._store(new_rows, overwrite_rows, vectors, now))
        report = self.report
        for position, reason in outcome.refused:
            report.duplicates += 1
            report.note(position, reason)
        report.imported += outcome.imported
        report.overwritten += outcome.overwritten
        report.links += outcome.links
        report.entity_links += outcome.graph["entity_links"]
        report.forgotten += outcome.graph["forgotten"]
        report.archived += outcome.graph["archived"]

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
    extract_entities: bool = True,
    skip_records: int = 0,
    expected: int | None = None,
    phase: Callable[[str], None] | None = None,
) -> ImportReport:
    """``records`` is a callable returning a fresh iterator (strict mode reads the archive twice).

    ``expected`` is the archive's own count of records when it says one: a big import moves the bank
    onto its own vector index, loads without HNSW upkeep and builds the index at the end.
    ``phase(name)`` is told when the import enters each step (loading, filling vectors, building the
    index, counting words), so a job can show it; it may raise to stop (what is committed stays).
    """
    enter = phase or (lambda name: None)
    if on_conflict not in ON_CONFLICT:
        raise InvalidInput(f"must be one of {', '.join(ON_CONFLICT)}", field="on_conflict")
    report = ImportReport(dry_run=dry_run, strict=strict, on_conflict=on_conflict)
    if strict and not dry_run:
        # Every rule a write applies, on every line, before the first one is written.
        check = strict_check(records())
        if check.invalid:
            report.lines, report.invalid, report.errors = check.lines, check.invalid, check.errors
            report.aborted = f"strict mode: {check.invalid} bad line(s), nothing was written"
            return report
    importer = _Importer(bank=bank, actor=actor, on_conflict=on_conflict, dry_run=dry_run,
                         source_label=source_label, report=report, extract_entities=extract_entities)
    if not dry_run and not embedder_available(importer.embedder):
        importer.embedder.embed([])  # refuses (503, naming the model) before anything is written
    build_index = False
    if not dry_run:
        # Written first, so rows of a batch that commits before a crash always sit under an import record.
        audit_record(actor=actor, action="bank.import.start", bank=bank,
                     details={"on_conflict": on_conflict, "source": source_label})
        bank_embedder_pin(bank, importer.embedder)
        build_index = bank_vector_index_prepare(bank, incoming=max(0, (expected or 0) - skip_records))
        # Embedding slower than storing: store every batch now (keyword-searchable at once), vectors after.
        importer.defer = build_index and defer_vectors(importer.embedder)
        importer.big = (expected or 0) - skip_records >= settings.MEMORYHUB_OWN_VECTOR_INDEX_MIN
    with bank_loading(bank):
        enter("loading")
        load(importer, batches(after(records(), skip_records, report), batch_size), progress)
        if not dry_run and (build_index or bank.own_vector_index):
            # Memories stored without their vectors (deferred) get them before the index is built.
            enter("filling vectors")
            bank_vectors_fill(bank)
    if not dry_run:
        if build_index or bank.own_vector_index:
            # Batches are committed and searchable by keyword already; semantic recall is exact until this ends.
            enter("building index")
            bank_vector_index_build(bank)
        report.unresolved_links = links_unresolved(bank)
    else:
        report.unresolved_links = importer.preview.unresolved()
    if not dry_run:
        if importer.big:
            enter("counting words")
            memory_statistics_refresh()
            bank_lexemes_after_load(bank)  # its word weights, before the first question
    # Bad lines are found while reading, duplicates while classifying: report them in file order.
    report.errors.sort(key=lambda e: (0, e["line"], "") if isinstance(e["line"], int) else (1, 0, str(e["line"])))
    if not dry_run:
        audit_record(actor=actor, action="bank.import", bank=bank, details={"counts": report.counts(),
                                                                               "on_conflict": on_conflict,
                                                                               "source": source_label})
    return report
