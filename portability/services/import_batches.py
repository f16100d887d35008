"""The importer's batch pipeline: records in batches, the embedding workers one batch ahead of the writer."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from django.conf import settings

from banks.providers.embed_pool import EmbedPool, Pending
from portability.records import MemoryRecord, RecordError

if TYPE_CHECKING:
    from portability.services.importer import ImportReport, _Importer


def after(items: Iterable[MemoryRecord | RecordError], skip: int,
          report: ImportReport) -> Iterator[MemoryRecord | RecordError]:
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


def _run(importer: _Importer, batch: list[MemoryRecord | RecordError], todo: list[MemoryRecord], pending: Pending,
         progress: Callable[[ImportReport], None] | None) -> None:
    importer.ready = {id(record): literal for record, literal in zip(todo, pending.get(), strict=True)}
    importer.run_batch(batch)
    importer.ready = {}
    if progress:
        progress(importer.report)


def load(importer: _Importer, stream: Iterator[list[MemoryRecord | RecordError]],
         progress: Callable[[ImportReport], None] | None) -> None:
    """Every batch, the embedding workers embedding batch n + 1 while batch n is written."""
    # Worker processes take a second or two to start: worth it for big imports only.
    workers = settings.MEMORYHUB_EMBED_WORKERS if importer.big and not (importer.dry_run or importer.defer) else 1
    with EmbedPool(importer.embedder, workers) as pool:
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
                    _run(importer, *ahead, progress)
                raise
            todo = importer.to_embed(batch)
            current, ahead = ahead, (batch, todo, pool.submit([r.text for r in todo]))
            if current is not None:
                _run(importer, *current, progress)
        if ahead is not None:
            _run(importer, *ahead, progress)


