"""Statements prepared once per database session (memoryhub.postgres.prepared)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memoryhub.postgres import prepared
from memoryhub.postgres.prepared import _prepared_form, execute_prepared

SQL = "SELECT %s::int + %s::int, 'a%%b'"
NAMED = "SELECT %(n)s::int * 2, %(word)s::text || %(n)s::text"


def test_placeholders_become_numbered_parameters():
    name, prepare, order = _prepared_form(SQL)
    assert prepare == f"PREPARE {name} AS SELECT $1::int + $2::int, 'a%b'" and order == 2
    name2, prepare2, order2 = _prepared_form(NAMED)
    # A named placeholder keeps one number wherever it appears, numbered by its first appearance.
    assert prepare2 == f"PREPARE {name2} AS SELECT $1::int * 2, $2::text || $1::text" and order2 == ("n", "word")
    assert name.startswith("memoryhub_") and name != name2 and _prepared_form(SQL)[0] == name
    with pytest.raises(ValueError, match="mixes named and positional"):
        _prepared_form("SELECT %s, %(n)s")


def _statements(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"].split()[0] for q in captured.captured_queries]


@pytest.mark.django_db(transaction=True)
def test_a_statement_is_prepared_once_per_connection_and_answers_as_plainly():
    connection.close()
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        execute_prepared(cursor, SQL, [2, 3])
        first = cursor.fetchall()
        execute_prepared(cursor, SQL, [4, 5])
        second = cursor.fetchall()
        execute_prepared(cursor, NAMED, {"n": 7, "word": "x"})
        named = cursor.fetchall()
    assert first == [(5, "a%b")] and second == [(9, "a%b")] and named == [(14, "x7")]
    assert _statements(captured) == ["PREPARE", "EXECUTE", "EXECUTE", "PREPARE", "EXECUTE"]
    # A new connection (after a restart of the database, say) has none: it prepares again.
    connection.close()
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        execute_prepared(cursor, SQL, [1, 1])
        assert cursor.fetchall() == [(2, "a%b")]
    assert _statements(captured) == ["PREPARE", "EXECUTE"]


@pytest.mark.django_db(transaction=True)
def test_a_statement_prepared_in_a_transaction_that_rolls_back_stays_prepared():
    connection.close()
    with pytest.raises(RuntimeError), transaction.atomic(), connection.cursor() as cursor:
        execute_prepared(cursor, SQL, [1, 2])
        raise RuntimeError
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        execute_prepared(cursor, SQL, [1, 2])
        assert cursor.fetchall() == [(3, "a%b")]
    assert _statements(captured) == ["EXECUTE"]


@pytest.mark.django_db(transaction=True)
def test_sent_plainly_where_the_session_is_not_the_clients_or_ends_with_the_request(settings, monkeypatch):
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        execute_prepared(cursor, NAMED, {"n": 1, "word": "y"})
        assert cursor.fetchall() == [(2, "y1")]
    monkeypatch.undo()
    settings.MEMORYHUB_DB_SESSION_SETTINGS = False  # behind a transaction-pooling proxy
    with CaptureQueriesContext(connection) as captured2, connection.cursor() as cursor:
        execute_prepared(cursor, SQL, [1, 2])
        assert cursor.fetchall() == [(3, "a%b")]
    assert _statements(captured) == _statements(captured2) == ["SELECT"]


@pytest.mark.django_db(transaction=True)
def test_past_the_bound_statements_run_plainly(monkeypatch):
    connection.close()
    monkeypatch.setattr(prepared, "MAX_PER_CONNECTION", 1)
    with CaptureQueriesContext(connection) as captured, connection.cursor() as cursor:
        execute_prepared(cursor, SQL, [1, 2])
        execute_prepared(cursor, NAMED, {"n": 3, "word": "z"})
        assert cursor.fetchall() == [(6, "z3")]
        execute_prepared(cursor, SQL, [2, 2])
        assert cursor.fetchall() == [(4, "a%b")]
    assert _statements(captured) == ["PREPARE", "EXECUTE", "SELECT", "EXECUTE"]


@pytest.mark.django_db(transaction=True)
def test_parameters_that_do_not_fit_the_statement_are_refused_before_anything_is_sent():
    connection.close()
    with connection.cursor() as cursor:
        execute_prepared(cursor, SQL, [1, 2])
        with CaptureQueriesContext(connection) as captured:
            with pytest.raises(TypeError, match="takes 2 parameters, 1 given"):
                execute_prepared(cursor, SQL, [1])
            with pytest.raises(TypeError, match="mapping"):
                execute_prepared(cursor, NAMED, [1, "x"])
    assert captured.captured_queries == []
