"""The HNSW graph-walk settings live on the database session, set once per connection, never by a
transaction that could roll them back, and per query behind a transaction pooler."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from banks.selectors.recall import recall_memories
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db(transaction=True)


def _session_settings() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.iterative_scan', true), current_setting('hnsw.ef_search', true)")
        return cursor.fetchone()


def _walk_statements(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "hnsw." in q["sql"]]


def _breadth_set(statement: str) -> str:
    """The ef_search a walk statement set. Not a constant: the breadth follows the planner's estimate of
    the shared graph's rows, which depends on when the table was last analyzed (and so on the tests
    that ran before)."""
    found = re.search(r"hnsw\.ef_search', '(\d+)'", statement)
    assert found, statement
    return found.group(1)


@pytest.fixture(autouse=True)
def always_walk(settings):
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 0  # banks this small are otherwise read exactly, without a walk


@pytest.fixture
def filled(bank):
    for i in range(30):
        memory_retain(bank=bank, text=f"Note {i}: the quarterly report mentions budget line {i * 7}.", actor="test",
                      near_dedup=False)
    connection.close()  # each test starts on a fresh session
    return bank


def test_the_first_recall_of_a_session_sets_the_walk_and_later_ones_send_nothing(filled):
    with CaptureQueriesContext(connection) as first:
        hits, *_ = recall_memories(filled, "budget report", arms=("semantic",), max_results=10)
    assert len(hits) == 10
    walk = _walk_statements(first)
    assert len(walk) == 1 and not any(q["sql"] == "BEGIN" for q in first.captured_queries)
    assert _session_settings() == ("relaxed_order", _breadth_set(walk[0]))
    with CaptureQueriesContext(connection) as second:
        recall_memories(filled, "quarterly budget", arms=("semantic",), max_results=10)
    assert _walk_statements(second) == []


def test_inside_a_transaction_the_walk_is_set_locally_and_a_rollback_leaves_the_session_as_it_was(filled):
    with CaptureQueriesContext(connection) as inside, transaction.atomic():
        hits, *_ = recall_memories(filled, "budget report", arms=("semantic",), max_results=10)
        assert len(hits) == 10
        transaction.set_rollback(True)
    breadth = _breadth_set(_walk_statements(inside)[0])
    # A session-level change made in that transaction would be gone now, and the process would not know.
    assert _session_settings()[1] != breadth
    with CaptureQueriesContext(connection) as after:
        recall_memories(filled, "budget report", arms=("semantic",), max_results=10)
    walk = _walk_statements(after)
    assert len(walk) == 1  # set for the session now, outside any transaction
    assert _session_settings() == ("relaxed_order", _breadth_set(walk[0]))


def test_behind_a_transaction_pooler_every_search_sets_the_walk_in_its_own_transaction(filled, settings):
    settings.MEMORYHUB_DB_SESSION_SETTINGS = False
    for _ in range(2):
        with CaptureQueriesContext(connection) as captured:
            hits, *_ = recall_memories(filled, "budget report", arms=("semantic",), max_results=10)
        assert len(hits) == 10
        walk = _walk_statements(captured)
        assert len(walk) == 1 and "true)" in walk[0]  # set_config(..., true): SET LOCAL
        assert [q["sql"] for q in captured.captured_queries].count("BEGIN") == 1
    assert _session_settings()[1] != _breadth_set(walk[0])
