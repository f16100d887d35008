"""Helpers for tests that race real threads against the real database, and a slow local embeddings server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection


def run_in_threads(count: int, work: Callable[[int], Any]) -> tuple[list[Any], list[BaseException | None]]:
    """Run ``work(i)`` in ``count`` threads released together; each thread uses (and closes) its own
    database connection. Returns the results and the exceptions, by thread index."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException | None] = [None] * count

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001  (reported to the test)
            errors[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results, errors


def wait_for_lock_waiter(query_like: str, *, tries: int, pause: float) -> bool:
    """Poll, on this thread's connection, until a backend waits for a lock while running a statement
    LIKE ``query_like``: a holder inside its transaction calls this before it commits, so the race
    happens as the test means. Inside a transaction pg_stat_activity is read from a snapshot taken at
    its first read, so each look clears it; without that the wait is never seen and the holder waits
    out every try."""
    with connection.cursor() as cursor:
        for _ in range(tries):
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                           "AND query LIKE %s", [query_like])
            if cursor.fetchone()[0]:
                return True
            cursor.execute("SELECT pg_sleep(%s)", [pause])
    return False



