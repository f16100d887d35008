"""A second database connection for a request's independent reads, so two of them run at once.

Recall's semantic arm (a graph walk) and keyword arm (BM25) read the same bank independently and, on
a big bank, at a similar cost: one after the other, a question waited for the sum of both. Each
process keeps one helper thread; Django's connections are per thread, so the helper reads on
connections of its own while the request's thread runs the other read. The helper treats each read
as a request does its connections (an aged or broken one is replaced first), and the read runs with
the caller's context variables (memoryhub.replica's routing goes along).

A caller inside a transaction runs everything itself: the helper's connection would not see the
transaction's uncommitted rows.

Two reads at once only help while a core would otherwise wait. On a saturated machine the second
connection's backend, its planning and the hand-over to the thread are CPU the requests queued behind
pay for: 30 clients on two cores with the database on the same machine (``bench/load_bench.py
--memories 3000 --seconds 60 --warmup 30``, three web workers, MiniLM) served 91.3 and 91.8 req/s at
20.8 and 20.7 ms of CPU a request with the helper, 102.2 and 92.8 req/s at 18.8 and 20.7 ms without it
(runs of the same code differ by up to 10 %). So by default (``MEMORYHUB_READ_BESIDE=auto``) the helper is used only while the machine's
one-minute load average is below the cores this process may run on; ``1`` uses it always, ``0`` never.
"""

from __future__ import annotations

import contextvars
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from django.conf import settings
from django.db import close_old_connections, connections

R = TypeVar("R")
_CLOSE = object()


class _Helper:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def _ensure_thread(self) -> None:
        if self._pid != os.getpid():  # a forked child has no helper thread: its own starts on first use
            self._queue, self._thread, self._pid = queue.SimpleQueue(), None, os.getpid()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, args=(self._queue,), name="read-beside", daemon=True)
            self._thread.start()

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        future: Future[R] = Future()
        with self._lock:
            self._ensure_thread()
            self._queue.put((future, contextvars.copy_context(), fn, args))
        return future

    def close_connections(self, timeout: float = 5.0) -> None:
        """Close the helper's connections (before a test database is dropped, say); it opens new ones when next used."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                return
            done = threading.Event()
            self._queue.put((_CLOSE, done))
        done.wait(timeout)

    @staticmethod
    def _run(jobs: queue.SimpleQueue[Any]) -> None:
        while True:
            item = jobs.get()
            if item[0] is _CLOSE:
                connections.close_all()
                item[1].set()
                continue
            future, context, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            close_old_connections()  # as at the start of a request: an aged or broken connection is replaced
            try:
                result = context.run(fn, *args)
            except BaseException as exc:  # noqa: BLE001  (handed to the caller, who raises it)
                future.set_exception(exc)
            else:
                future.set_result(result)


_helper = _Helper()


def a_core_is_idle(load: float | None = None, cores: int | None = None) -> bool:
    """Whether the machine has a core to spare: its one-minute load average (runnable processes, every
    process's) below the cores this process may run on. Inside a container the load average is the
    host's, so there this errs towards using the helper, as it always did."""
    if load is None:
        load = os.getloadavg()[0]
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return load < cores


def read_beside(fn: Callable[..., R], *args: Any) -> Future[R] | None:
    """Start ``fn(*args)`` on the helper thread; None when the caller should run it itself (the helper
    is off, or in auto mode no core is idle, or the caller is inside a transaction on any connection)."""
    mode = getattr(settings, "MEMORYHUB_READ_BESIDE", None)
    if mode is False or (mode is None and not a_core_is_idle()):
        return None
    if any(conn.in_atomic_block for conn in connections.all(initialized_only=True)):
        return None
    return _helper.submit(fn, *args)


def close_helper_connections() -> None:
    _helper.close_connections()
