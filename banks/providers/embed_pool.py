"""Embed many texts on every core: worker processes, one batch ahead of the caller.

A bulk import whose archive carries no vectors spends most of its Python time embedding
(and formatting the vectors as pgvector literals). Both are CPU-bound and the GIL keeps them
on one core, so the work goes to a pool of worker processes, each building the same embedder
once and returning ready-made literals. ``submit`` returns at once, so the pool embeds the next
batch while the caller writes the current one; at most two batches are in flight, so memory
stays flat.

Workers are *spawned*, not forked: a fork of a Celery worker inherits its signal handlers (a
SIGTERM would no longer end the child), any lock another thread held at that instant (a child
can hang on it forever) and the database socket (the session outlives the parent). Spawning
costs a second or two per worker, so callers use a pool only for big imports.

Only local embedders use it: a remote API gets no faster from more processes, only rate limited.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Sequence
from multiprocessing.pool import AsyncResult, Pool
from typing import Any

from banks.providers import embed_worker
from banks.providers.embeddings import Embedder, HashingEmbedder
from banks.vectors import vector_literal
from memoryhub.env import env_str

logger = logging.getLogger(__name__)
# Seconds a spawned worker may take to import Django and build its embedder (a local model loads).
STARTUP_TIMEOUT = 120


def _children_use_this_database() -> None:
    """A spawned worker loads the settings: it must join this process's database by URL, never start or
    stop an embedded server of its own (it does not even query it)."""
    from django.conf import settings

    if not env_str("DATABASE_URL"):
        os.environ["MEMORYHUB_EMBEDDED_DATABASE_URL"] = settings.MEMORYHUB_DATABASE_URL


def local_spec(embedder: Embedder) -> str | None:
    """The spec a worker rebuilds ``embedder`` from; None for an embedder that is not local."""
    if isinstance(embedder, HashingEmbedder):
        return f"hashing:{embedder.dimensions}"
    if type(embedder).__name__ == "MiniLMEmbedder":
        return "minilm"
    return None


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
        self._authkey: Any = None

    def __enter__(self) -> EmbedPool:
        spec = local_spec(self.embedder)
        if self.workers > 1 and spec is not None:
            # A Celery prefork child is a daemonic process, which multiprocessing forbids to have children
            # lest they outlive it. These cannot: __exit__ terminates them, and a worker whose parent dies
            # reads end-of-file on its task pipe and exits. So the flag is lifted while the pool lives.
            config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
            self._daemon = config.pop("daemon", None)
            # Celery's processes carry an authkey of its own type, which spawn refuses to pickle: a fresh
            # standard one while the pool lives (the pool's pipes do not authenticate).
            self._authkey = config.get("authkey")
            config["authkey"] = multiprocessing.process.AuthenticationString(  # type: ignore[attr-defined]
                os.urandom(32))
            _children_use_this_database()
            try:
                self._pool = multiprocessing.get_context("spawn").Pool(
                    self.workers, initializer=embed_worker.start, initargs=(spec,))
                # A worker that cannot start is replaced forever and would hang every submit: check one first.
                if not self._pool.apply_async(embed_worker.ready).get(timeout=STARTUP_TIMEOUT):
                    raise OSError("an embedding worker started without its embedder")
            except (OSError, AssertionError, ValueError, TypeError, multiprocessing.TimeoutError) as exc:
                logger.warning("embedding in one process: could not start workers (%s)", exc)
                if self._pool is not None:
                    self._pool.terminate()
                    self._pool = None
                self._restore_daemon()
        return self

    def _restore_daemon(self) -> None:
        config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
        if self._daemon is not None:
            config["daemon"] = self._daemon
            self._daemon = None
        if self._authkey is not None:
            config["authkey"] = self._authkey
            self._authkey = None

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
        return Pending(self._pool.map_async(embed_worker.embed_literals, chunks))
