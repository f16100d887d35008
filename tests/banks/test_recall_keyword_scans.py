"""The keyword arm's statements are planned through the bank's GIN indexes: plain index scans and
sequential scans are off for each of them (recall_keyword.postings_query), and put back after it.

Without it, a LIMIT the planner cannot see (rows holding one question word, after those holding two)
was guessed small and the whole table read in order, every row tested against the question: on a
3,000-memory bank 439 buffers against 258 through the GIN bitmap (docs/benchmarks.md, "Load")."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from banks.selectors.recall_keyword import postings_query

pytestmark = pytest.mark.django_db

SETTINGS = "SELECT current_setting('enable_indexscan'), current_setting('enable_seqscan')"


def test_a_keyword_statement_runs_with_index_and_sequential_scans_off():
    with connection.cursor() as cursor:
        assert postings_query(cursor, SETTINGS, []) == [("off", "off")]
        cursor.execute(SETTINGS)
        assert cursor.fetchone() == ("on", "on")


def test_the_scans_are_put_back_inside_a_callers_transaction():
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a caller's own choice is what comes back
        assert postings_query(cursor, SETTINGS, []) == [("off", "off")]
        cursor.execute(SETTINGS)
        assert cursor.fetchone() == ("on", "off")
