"""The keyword arm's statements are planned through the bank's GIN indexes: plain index scans and
sequential scans are off for each of them (recall_keyword.postings_query), and put back after it.

Without it, a LIMIT the planner cannot see (rows holding one question word, after those holding two)
was guessed small and the whole table read in order, every row tested against the question: on a
3,000-memory bank 439 buffers against 258 through the GIN bitmap (docs/benchmarks.md, "Load")."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from banks.selectors.recall_keyword import SCANS_OFF_PREFIX, postings_query

pytestmark = pytest.mark.django_db

SETTINGS = "SELECT current_setting('enable_indexscan'), current_setting('enable_seqscan'), %s::int"


def _sent(sql_seen: list[str]):
    def capture(execute, sql, params, many, context):
        sql_seen.append(sql)
        return execute(sql, params, many, context)
    return capture


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_settings_go_in_the_statements_own_message():
    """One message, one implicit transaction: the settings end with it, and no BEGIN or COMMIT is sent."""
    sent: list[str] = []
    with connection.cursor() as cursor:
        with connection.execute_wrapper(_sent(sent)):
            assert postings_query(cursor, SETTINGS, [7]) == [("off", "off", 7)]
        assert sent == [SCANS_OFF_PREFIX + SETTINGS]
        assert connection.connection.info.transaction_status == 0  # idle: nothing left open
        cursor.execute(SETTINGS, [1])
        assert cursor.fetchone() == ("on", "on", 1)


def test_a_keyword_statement_runs_with_index_and_sequential_scans_off():
    with connection.cursor() as cursor:
        assert postings_query(cursor, SETTINGS, [1]) == [("off", "off", 1)]
        cursor.execute(SETTINGS, [1])
        assert cursor.fetchone() == ("on", "on", 1)


def test_the_scans_are_put_back_inside_a_callers_transaction():
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a caller's own choice is what comes back
        assert postings_query(cursor, SETTINGS, [1]) == [("off", "off", 1)]
        cursor.execute(SETTINGS, [1])
        assert cursor.fetchone() == ("on", "off", 1)
