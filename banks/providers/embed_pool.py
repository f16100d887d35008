"""Embed many texts on every core: worker processes, one batch ahead of the caller.

A bulk import whose archive carries no vectors spends most of its Python time embedding
(and formatting the vectors as pgvector literals). Both are CPU-bound and the GIL keeps them
on one core, so the work goes to a pool of forked processes: each inherits the embedder
already built (a local model is loaded once, its weights shared copy-on-write) and returns
ready-made literals. ``submit`` returns at once, so the pool embeds the next batch while the
caller writes the current one; at most two batches are in flight, so memory stays flat.

Only local embedders use it: a remote API gets no faster from more processes, only rate limited.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Sequence
from multiprocessing.pool import AsyncResult, Pool
from typing import Any

from banks.providers.embeddings import Embedder, HashingEmbedder
from banks.vectors import vector_literal

logger = logging.getLogger(__name__)

# The embedder the forked workers use (set in the parent just before the fork).
_WORKER_EMBEDDER: Embedder | None = None


def _embed_literals(texts: list[str]) -> list[str]:
    assert _WORKER_EMBEDDER is not None  # noqa: S101  (set before the fork)
    return [vector_literal(v) for v in _WORKER_EMBEDDER.embed(texts)]


def is_local(embedder: Embedder) -> bool:
    return isinstance(embedder, HashingEmbedder) or type(embedder).__name__ == "MiniLMEmbedder"


class Pending:
    """Literals being computed for a list of texts (``get`` waits for them)."""

    def __init__(self, parts: AsyncResult[list[list[str]]] | None, done: list[str] | None = None) -> None:
        self._parts, self._done = parts, done

    def get(self) -> list[str]:
        if self._done is None:
            assert self._parts is not None  # noqa: S101
            self._done = [literal for part in self._parts.get() for literal in part]
        return self._done


class EmbedPool:
    """``with EmbedPool(embedder, workers) as pool: pending = pool.submit(texts); ...; pending.get()``.

    With one worker, or an embedder that is not local, or where processes cannot be started,
    ``submit`` embeds in the calling process: same results, no parallelism.
    """

    def __init__(self, embedder: Embedder, workers: int | None = None) -> None:
        self.embedder = embedder
        self.workers = workers if workers is not None else (os.cpu_count() or 1)
        self._pool: Pool | None = None
        self._daemon: Any = None

    def __enter__(self) -> EmbedPool:
        global _WORKER_EMBEDDER  # noqa: PLW0603  (what forked workers inherit)
        if self.workers > 1 and is_local(self.embedder):
            _WORKER_EMBEDDER = self.embedder
            # A Celery prefork child is a daemonic process, which multiprocessing forbids to have children
            # lest they outlive it. These cannot: __exit__ terminates them, and a worker whose parent dies
            # reads end-of-file on its task pipe and exits. So the flag is lifted while the pool lives.
            config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
            self._daemon = config.pop("daemon", None)
            try:
                self._pool = multiprocessing.get_context("fork").Pool(self.workers)
            except (OSError, AssertionError, ValueError) as exc:
                logger.warning("embedding in one process: could not start workers (%s)", exc)
                self._restore_daemon()
        return self

    def _restore_daemon(self) -> None:
        if self._daemon is not None:
            multiprocessing.current_process()._config["daemon"] = self._daemon  # type: ignore[attr-defined]
            self._daemon = None

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
        self._restore_daemon()

    def submit(self, texts: Sequence[str]) -> Pending:
        texts = list(texts)
        if not texts:
            return Pending(None, [])
        if self._pool is None:
            return Pending(None, [vector_literal(v) for v in self.embedder.embed(texts)])
        size = max(16, -(-len(texts) // self.workers))
        chunks = [texts[i:i + size] for i in range(0, len(texts), size)]
        return Pending(self._pool.map_async(_embed_literals, chunks))
