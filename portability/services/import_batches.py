"""The importer's batch pipeline: records in batches, the embedding workers one batch ahead of the writer.

It drives any importer of the shape ``BatchImporter`` describes (portability.services.importer's) and
imports nothing of it, so the dependency runs one way: the importer uses the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol

from django.conf import settings
from django.db import connection, connections

from banks.providers.embed_pool import EmbedPool, Pending
from banks.providers.embeddings import Embedder
from memoryhub.liveness import beat
from portability.records import MemoryRecord, RecordError


class Progress(Protocol):
    """The counts of an import the pipeline moves on (a resumed import's skipped lines)."""

    lines: int
    resumed_after: int


class BatchImporter(Protocol):
    """What the pipeline asks of an importer: which records need embedding, and to store a batch."""

    big: bool
    dry_run: bool
    defer: bool
    embedder: Embedder
    # Vector literals the embedding workers computed for the batch being stored, by id() of the record.
    ready: dict[int, str]

    @property
    def report(self) -> Progress: ...

    def to_embed(self, batch: list[MemoryRecord | RecordError]) -> list[MemoryRecord]: ...

    def vector_text(self, record: MemoryRecord) -> str: ...

    def run_batch(self, batch: list[MemoryRecord | RecordError]) -> None: ...


def after(items: Iterable[MemoryRecord | RecordError], skip: int,
          report: Progress) -> Iterator[MemoryRecord | RecordError]:
    """A resumed import passes over the records its dead predecessor already committed."""
    for index, item in enumerate(items):
        if index < skip:
            report.lines += 1
            report.resumed_after = index + 1
            continue
        yield item


def batches(items: Iterable[MemoryRecord | RecordError], size: int) -> Iterator[list[MemoryRecord | RecordError]]:
    batch: list[MemoryRecord | RecordError] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _run(importer: BatchImporter, batch: list[MemoryRecord | RecordError], todo: list[MemoryRecord],
         pending: Pending, progress: Callable[[Any], None] | None) -> None:
    importer.ready = {id(record): literal for record, literal in zip(todo, pending.get(), strict=True)}
    importer.run_batch(batch)
    importer.ready = {}
    beat()  # served in a request: a web worker is not cut while batches keep landing (memoryhub.liveness)
    if progress:
        progress(importer.report)


class _Writer:
    """Writes batches one at a time, in order; with ``overlap``, on a thread of its own.

    Storing a batch is mostly waiting for PostgreSQL, while reading, parsing and embedding the next
    one is Python on this thread: overlapped, the two use both cores (the 100k import bench spent
    37 % of its storing time waiting on the database, 45 % parsing and embedding, one after the other).
    The thread has its own database connection, so it is only used outside a caller's transaction
    (whose rows it could not see), for big imports.
    """

    def __init__(self, overlap: bool) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-writer") if overlap else None
        self._running: Future[None] | None = None

    def run(self, write: Callable[[], None]) -> None:
        """Write a batch once the one before it is written (its failure is raised here)."""
        self.wait()
        if self._executor is None:
            write()
        else:
            self._running = self._executor.submit(write)

    def wait(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            running.result()

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.wait()
        finally:
            if self._executor is not None:
                # Whatever happened, the thread finishes its batch and gives its connection back.
                if self._running is not None:
                    self._running.exception()
                self._executor.submit(connections.close_all).result()
                self._executor.shutdown()


def load(importer: BatchImporter, stream: Iterator[list[MemoryRecord | RecordError]],
         progress: Callable[[Any], None] | None) -> None:
    """Every batch: the embedding workers embed batch n + 1 while batch n is written (on the writer
    thread, for a big import, while this thread reads and parses batch n + 2)."""
    # Worker processes take a second or two to start: worth it for big imports only.
    workers = settings.MEMORYHUB_EMBED_WORKERS if importer.big and not (importer.dry_run or importer.defer) else 1
    overlap = importer.big and not importer.dry_run and not connection.in_atomic_block
    with EmbedPool(importer.embedder, workers) as pool, _Writer(overlap) as writer:
        ahead: tuple[list[MemoryRecord | RecordError], list[MemoryRecord], Pending] | None = None
        while True:
            try:
                batch = next(stream)
            except StopIteration:
                break
            except Exception:
                # The archive failed to read further: what was read before it is still written, as it was
                # before reading ran one batch ahead.
                if ahead is not None:
                    writer.run(partial(_run, importer, *ahead, progress))
                writer.wait()
                raise
            todo = importer.to_embed(batch)
            current, ahead = ahead, (batch, todo, pool.submit([importer.vector_text(r) for r in todo]))
            if current is not None:
                writer.run(partial(_run, importer, *current, progress))
        if ahead is not None:
            writer.run(partial(_run, importer, *ahead, progress))
