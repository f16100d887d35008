"""Who holds a session on the test database: each named, so one left open at the end says whose it is.

A test database is dropped when its run ends, and PostgreSQL refuses while any other session is on it
("being accessed by other users"): the database then stays behind on the test server. Every
connection the test process opens is named after its thread (``application_name``), and the processes
it starts (web servers) inherit a name saying whose children they are (``PGAPPNAME``); a Celery worker's
name also says which worker it is (tests/worker.py), so a test can wait for a killed one's sessions.
At the end, sessions still open are listed by those names and ended, so the drop goes through and the
run says which thread or child forgot its connection.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from typing import Any

import pytest
from django.db import connection
from django.db.backends.signals import connection_created

# What the server keeps of an application_name (NAMEDATALEN - 1).
_NAME_LENGTH = 63


def _thread_name() -> str:
    return f"pytest {os.getpid()} {threading.current_thread().name}"[:_NAME_LENGTH]


def _name_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
    # On the driver's connection, so the statement is no test's and passes no check of statements.
    raw = connection.connection
    raw.execute("SELECT set_config('application_name', %s, false)", [_thread_name()])
    if not raw.autocommit:
        raw.commit()


def name_connections_by_thread() -> None:
    """From now on, this process's connections carry their thread's name, and its children say whose they are."""
    os.environ["PGAPPNAME"] = f"pytest {os.getpid()} child"[:_NAME_LENGTH]
    connection_created.connect(_name_connection, dispatch_uid="tests.db_sessions.name_connection")


def sessions_on_the_test_database() -> list[tuple[int, str, str, str]]:
    """Every other session on this connection's database: (pid, application name, state, last statement)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, application_name, coalesce(state, ''), left(coalesce(query, ''), 120)"
            " FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return [(int(pid), name, state, query) for pid, name, state, query in cursor.fetchall()]


def sessions_left_on_the_test_database_ended(wait: float = 5.0) -> None:
    """Warn of every other session still on the test database (a closing one gets ``wait`` seconds), and end them."""
    deadline = time.monotonic() + wait
    others = sessions_on_the_test_database()
    while others and time.monotonic() < deadline:
        time.sleep(0.2)
        others = sessions_on_the_test_database()
    if not others:
        return
    listed = "; ".join(f"pid {pid} '{name}' {state}: {query!r}" for pid, name, state, query in others)
    warnings.warn(pytest.PytestWarning(f"{len(others)} session(s) still on the test database at the end, "
                                       f"ended so it can be dropped: {listed}"), stacklevel=1)
    with connection.cursor() as cursor:
        for pid, *_ in others:
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
