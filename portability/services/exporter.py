"""Export a bank as an archive, streaming from one database snapshot.

The count in the header and the lines that follow come from the same
REPEATABLE READ snapshot, so they agree even while the bank is being written.
Files are written atomically (temporary file beside the target, fsync, rename).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from django.db import connection, transaction
from django.db.models import Prefetch

from banks.models import Bank, Memory, MemoryEntity, MemoryLink, Observation, ObservationEvidence
from banks.services.audit import audit_record
from memoryhub.liveness import beat
from portability.formats.ama import (
    AmaCountMismatch,
    atomic_write,
    dumps_line,
    header_line,
    record_to_line,
)
from portability.paths import DirectoryWriter, Location, as_location, directory_export
from portability.records import ArchiveHeader, EntityRecord, LinkRecord, MemoryRecord
from portability.services.export_lines import memory_lines

CHUNK = 2000


@dataclass
class ExportReport:
    bank_id: str
    path: str
    exported_count: int
    memories: int
    observations: int


def memory_record(memory: Memory, *, include_embeddings: bool) -> MemoryRecord:
    embedding = None
    if include_embeddings and memory.embedding is not None:
        embedding = [float(x) for x in memory.embedding]
    return MemoryRecord(
        text=memory.text, memory_id=memory.memory_id, fact_type=memory.fact_type, tags=list(memory.tags),
        metadata=dict(memory.metadata or {}), occurred_at=memory.occurred_at, created_at=memory.created_at,
        retained_at=memory.retained_at, source=memory.source, memory_layer=memory.memory_layer,
        entities=[EntityRecord(name=m.entity.name, entity_type=m.entity.entity_type, aliases=list(m.entity.aliases))
                  for m in memory.mentions],  # type: ignore[attr-defined]  # _records' prefetch (to_attr)
        links=[LinkRecord(target_id=link.target.memory_id, link_type=link.link_type, confidence=link.confidence,
                          metadata=link.metadata or {}) for link in memory.links_out.all()],
        embedding=embedding, embedding_model=memory.embedding_model if embedding else None,
    )


def observation_record(observation: Observation) -> MemoryRecord:
    evidence = list(observation.evidence.all())
    return MemoryRecord(
        text=observation.text, memory_id=observation.observation_id, fact_type="observation",
        metadata={"_obs_source_ids": [e.memory_ref for e in evidence],
                  "_obs_source_timestamps": [e.evidence_at.isoformat() for e in evidence],
                  "_obs_proof_count": observation.proof_count, "_obs_confidence": observation.confidence,
                  "_obs_scope": observation.scope},
        created_at=observation.created_at, retained_at=observation.updated_at, memory_layer="observation",
    )


def _memories(bank: Bank, include_archived: bool):  # noqa: ANN202
    rows = Memory.objects.filter(bank=bank, forgotten_at__isnull=True)
    if not include_archived:
        rows = rows.filter(archived_at__isnull=True)
    return rows.order_by("id")


def _records(bank: Bank, *, include_embeddings: bool, include_entities: bool, include_observations: bool,
             include_archived: bool, memories: bool = True) -> Iterator[MemoryRecord]:
    rows = _memories(bank, include_archived) if memories else Memory.objects.none()
    if include_entities:
        # Entities in the order the memory came to mention them, as the SQL-built lines write them. Each
        # prefetch names the bank of every table it reads: the related rows are otherwise read by their
        # memory's id alone, and the joined entity or target by its id alone (every bank's partition).
        mentions = (MemoryEntity.objects.filter(bank=bank, entity__bank_id=bank.pk).select_related("entity")
                    .only("memory_id", "entity__name", "entity__entity_type", "entity__aliases").order_by("id"))
        links = MemoryLink.objects.filter(bank=bank, target__bank_id=bank.pk).select_related("target")
        rows = rows.prefetch_related(Prefetch("memoryentity_set", queryset=mentions, to_attr="mentions"),
                                     Prefetch("links_out", queryset=links))
    else:
        rows = rows.prefetch_related(Prefetch("memoryentity_set", queryset=MemoryEntity.objects.none(),
                                              to_attr="mentions"),
                                     Prefetch("links_out", queryset=MemoryLink.objects.none()))
    if not include_embeddings:
        rows = rows.defer("embedding")
    for memory in rows.iterator(chunk_size=CHUNK):
        yield memory_record(memory, include_embeddings=include_embeddings)
    if include_observations:
        observations = Observation.objects.live().filter(bank=bank).order_by("id").prefetch_related(
            Prefetch("evidence", queryset=ObservationEvidence.objects.filter(bank=bank).order_by("evidence_at")))
        for observation in observations.iterator(chunk_size=CHUNK):
            yield observation_record(observation)


def _lines(bank: Bank, *, include_embeddings: bool, include_entities: bool, include_observations: bool,
           include_archived: bool) -> Iterator[str]:
    """Every line after the header. Memories come written by PostgreSQL (export_lines) unless embeddings
    are asked for; observations, few, through their records."""
    if include_embeddings:
        records = _records(bank, include_embeddings=True, include_entities=include_entities,
                           include_observations=include_observations, include_archived=include_archived)
        for record in records:
            yield dumps_line(record_to_line(record, include_embeddings=True, include_entities=include_entities))
        return
    yield from memory_lines(bank, include_entities=include_entities, include_archived=include_archived)
    if include_observations:
        for record in _records(bank, include_embeddings=False, include_entities=False, include_observations=True,
                               include_archived=False, memories=False):
            yield dumps_line(record_to_line(record, include_embeddings=False, include_entities=include_entities))


def _count(bank: Bank, include_observations: bool, include_archived: bool) -> tuple[int, int]:
    memories = _memories(bank, include_archived).count()
    observations = Observation.objects.live().filter(bank=bank).count() if include_observations else 0
    return memories, observations


class _snapshot:  # noqa: N801  (used like transaction.atomic)
    """A transaction that sees one snapshot throughout (REPEATABLE READ). Inside an enclosing
    transaction (a caller's, or a test's) the enclosing one already fixes what is seen."""

    def __enter__(self) -> None:
        outer = connection.in_atomic_block
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        if not outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._atomic.__exit__(exc_type, exc, traceback)


def archive_export(
    *, bank: Bank, dest: Path | Location, actor: str, include_embeddings: bool = False, include_entities: bool = True,
    include_observations: bool = True, include_archived: bool = False, provider: str = "memoryhub",
    progress: Callable[[int, int], None] | None = None,
) -> ExportReport:
    with _snapshot():
        memories, observations = _count(bank, include_observations, include_archived)
        total = memories + observations
        header = ArchiveHeader(format="ama", bank_id=bank.bank_id, exported_at=datetime.now(UTC).isoformat(),
                               provider=provider, memory_count=total)

        with atomic_write(dest) as fp:
            fp.write(dumps_line(header_line(header)))
            written = 0
            for written, line in enumerate(_lines(bank, include_embeddings=include_embeddings,  # noqa: B007
                                                  include_entities=include_entities,
                                                  include_observations=include_observations,
                                                  include_archived=include_archived), start=1):
                if written > total:
                    raise AmaCountMismatch(f"more memories than the header's memory_count {total}")
                fp.write(line)
                if written % CHUNK == 0:
                    beat()  # served in a request: a web worker is not cut while lines keep coming
                    if progress:
                        progress(written, total)
            if written != total:
                raise AmaCountMismatch(f"wrote {written} memories but the header says {total}")
    if progress:
        progress(written, total)
    audit_record(actor=actor, action="bank.export", bank=bank, details={
        "path": _text(dest), "exported_count": written, "include_embeddings": include_embeddings})
    return ExportReport(bank_id=bank.bank_id, path=_text(dest), exported_count=written, memories=memories,
                        observations=observations)


def archive_stream(*, bank: Bank, actor: str, include_embeddings: bool = False, include_entities: bool = True,
                   include_observations: bool = True) -> Iterator[str]:
    """The archive as lines of text, for a streamed download (one snapshot for the whole response)."""
    with _snapshot():
        memories, observations = _count(bank, include_observations, False)
        head = {"_ama_version": 1, "bank_id": bank.bank_id, "exported_at": datetime.now(UTC).isoformat(),
                "provider": "memoryhub", "memory_count": memories + observations}
        yield json.dumps(head, ensure_ascii=False) + "\n"
        yield from _lines(bank, include_embeddings=include_embeddings, include_entities=include_entities,
                          include_observations=include_observations, include_archived=False)
    audit_record(actor=actor, action="bank.download", bank=bank, details={"memory_count": memories + observations})


WRITERS = ("ama", "csv", "markdown", "amplihack", "agentos_json")


def _text(dest: Path | Location) -> str:
    return str(as_location(dest).path)


@contextmanager
def _target(dest: Path | Location, *, directory: bool) -> Iterator[Path | Location | DirectoryWriter]:
    """A directory export is built beside ``dest`` and renamed into place when complete (a killed export
    never leaves a half-written directory under the final name; the periodic job check removes stale
    ``.partial`` directories); it replaces only an earlier export, never a root or a bank's directory."""
    if not directory:
        yield dest
        return
    with directory_export(as_location(dest)) as writer:
        yield writer


def archive_export_as(*, bank: Bank, dest: Path | Location, fmt: str, actor: str, include_embeddings: bool = False
                      ) -> ExportReport:
    """Export in another format than AMA (CSV, a Markdown directory, amplihack JSON, AgentOS JSON)."""
    if fmt == "ama":
        return archive_export(bank=bank, dest=dest, actor=actor, include_embeddings=include_embeddings)
    from portability.formats.agentos_writer import write_agentos_json
    from portability.formats.amplihack import write_amplihack
    from portability.formats.csv_format import write_csv
    from portability.formats.markdown import write_markdown

    writers: dict[str, Callable[..., int]] = {"csv": write_csv, "markdown": write_markdown, "amplihack": write_amplihack,
               "agentos_json": write_agentos_json}
    if fmt not in writers:
        raise ValueError(f"cannot export as {fmt!r}; use one of: {', '.join(WRITERS)}")
    header = ArchiveHeader(format=fmt, bank_id=bank.bank_id, provider="memoryhub")
    with _snapshot(), _target(dest, directory=fmt == "markdown") as target:
        count = writers[fmt](target, header, _records(bank, include_embeddings=False, include_entities=True,
                                                    include_observations=fmt == "csv", include_archived=False))
    audit_record(actor=actor, action="bank.export", bank=bank, details={"path": _text(dest), "format": fmt,
                                                                       "exported_count": count})
    return ExportReport(bank_id=bank.bank_id, path=_text(dest), exported_count=count, memories=count, observations=0)
