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



