"""The session settings an HNSW index build runs with.

An HNSW graph that does not fit ``maintenance_work_mem`` builds an order of magnitude slower, and
PostgreSQL builds in parallel only as far as ``max_parallel_maintenance_workers`` lets it: builds set
``MEMORYHUB_INDEX_BUILD_MEMORY`` and ``MEMORYHUB_INDEX_BUILD_WORKERS`` for their session, and put the
session's own values back after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings


@contextmanager
def index_build_settings(cursor: Any) -> Iterator[None]:
    cursor.execute("SELECT current_setting('maintenance_work_mem'), current_setting('max_parallel_maintenance_workers')")
    memory, workers = cursor.fetchone()
    cursor.execute("SELECT set_config('maintenance_work_mem', %s, false), "
                   "set_config('max_parallel_maintenance_workers', %s, false)",
                   [settings.MEMORYHUB_INDEX_BUILD_MEMORY, str(settings.MEMORYHUB_INDEX_BUILD_WORKERS)])
    try:
        yield
    finally:
        cursor.execute("SELECT set_config('maintenance_work_mem', %s, false), "
                       "set_config('max_parallel_maintenance_workers', %s, false)", [memory, workers])
