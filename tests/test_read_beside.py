"""Recall's second connection: the semantic arm runs on the helper thread's own connection beside the
keyword arm, with the caller's context, never inside the caller's transaction, and a connection the
server dropped is replaced before the next read."""

from __future__ import annotations

import contextvars

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from banks.selectors.recall import recall_memories
from banks.services.memories import memory_retain
from memoryhub.read_beside import read_beside

pytestmark = pytest.mark.django_db(transaction=True)
_MARK: contextvars.ContextVar[str] = contextvars.ContextVar("test_mark", default="unset")


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@pytest.fixture
def filled(bank):
    for i in range(30):
        memory_retain(bank=bank, text=f"Note {i}: the harbour ferry left at {i} past nine.", actor="test",
                      near_dedup=False)
    return bank


def semantic_sql(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "<=>" in q["sql"]]


def test_the_semantic_arm_runs_on_another_connection_and_answers_the_same(filled, settings):
    with CaptureQueriesContext(connection) as here:
        beside, *_ = recall_memories(filled, "ferry harbour", max_results=10)
    assert semantic_sql(here) == []  # not on this connection
    settings.MEMORYHUB_READ_BESIDE = False
    with CaptureQueriesContext(connection) as alone:
        inline, *_ = recall_memories(filled, "ferry harbour", max_results=10)
    assert semantic_sql(alone)
    assert [(h.memory_id, h.arm_ranks) for h in beside] == [(h.memory_id, h.arm_ranks) for h in inline]


def test_inside_a_transaction_everything_runs_on_the_callers_connection(filled):
    with transaction.atomic():
        memory_retain(bank=filled, text="An uncommitted note about the ferry harbour.", actor="test", near_dedup=False)
        with CaptureQueriesContext(connection) as here:
            hits, *_ = recall_memories(filled, "uncommitted ferry harbour note", max_results=10)
        assert semantic_sql(here)
        assert "semantic" in next(h for h in hits if "uncommitted" in h.text).arm_ranks
    assert read_beside(backend_pid) is not None  # outside it, the helper is used again


def test_a_read_beside_runs_on_its_own_connection_with_the_callers_context():
    token = _MARK.set("from the caller")
    try:
        future = read_beside(lambda: (_MARK.get(), backend_pid()))
        assert future is not None
        mark, pid = future.result(timeout=10)
    finally:
        _MARK.reset(token)
    assert mark == "from the caller" and pid != backend_pid()


def test_an_error_reaches_the_caller_and_a_dropped_connection_is_replaced():
    def broken() -> None:
        raise ValueError("the read failed")

    with pytest.raises(ValueError, match="the read failed"):
        read_beside(broken).result(timeout=10)
    first = read_beside(backend_pid).result(timeout=10)
    with connection.cursor() as cursor:
        # Without a timeout the server only signals the backend and returns: the next read could reach
        # the helper's connection before the backend has ended it, and fail on it as any query racing a
        # termination does. With one, it returns once the backend has gone (its farewell then waits on
        # the helper's socket, which is what the health check looks for).
        cursor.execute("SELECT pg_terminate_backend(%s, 60000)", [first])
        assert cursor.fetchone()[0] is True
    second = read_beside(backend_pid).result(timeout=10)
    assert second != first


def test_off_means_the_caller_runs_it(settings):
    settings.MEMORYHUB_READ_BESIDE = False
    assert read_beside(backend_pid) is None


def test_in_auto_mode_the_helper_is_used_only_while_a_core_is_idle(settings, monkeypatch):
    from memoryhub import read_beside as module

    assert module.a_core_is_idle(load=0.4, cores=2) and not module.a_core_is_idle(load=2.0, cores=2)
    settings.MEMORYHUB_READ_BESIDE = None  # auto
    monkeypatch.setattr(module, "a_core_is_idle", lambda: False)
    assert read_beside(lambda: 1) is None  # saturated: the caller runs it itself
    monkeypatch.setattr(module, "a_core_is_idle", lambda: True)
    future = read_beside(lambda: 2)
    assert future is not None and future.result(timeout=10) == 2
    settings.MEMORYHUB_READ_BESIDE = True  # always, whatever the load
    monkeypatch.setattr(module, "a_core_is_idle", lambda: False)
    future = read_beside(lambda: 3)
    assert future is not None and future.result(timeout=10) == 3


def test_the_setting_reads_auto_on_and_off():
    from memoryhub.env import env_bool_or_auto

    assert env_bool_or_auto("X", env={}) is None
    assert env_bool_or_auto("X", env={"X": "auto"}) is None
    assert env_bool_or_auto("X", env={"X": "1"}) is True
    assert env_bool_or_auto("X", env={"X": "off"}) is False
    with pytest.raises(Exception, match="must be one of"):
        env_bool_or_auto("X", env={"X": "sometimes"})
