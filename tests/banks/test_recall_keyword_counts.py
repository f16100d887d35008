"""The keyword arm's term counts: recovered from ts_rank in SQL, they must equal the real position counts."""

from __future__ import annotations

import pytest
from django.db import connection

from banks.selectors.recall_keyword import _TERM_COUNT, tsquery_literal

pytestmark = pytest.mark.django_db


def test_term_counts_from_ts_rank_equal_the_positions_for_every_count_a_vector_holds():
    sql = _TERM_COUNT.replace("c.v", "to_tsvector('simple', repeat('kestrel ', n) || 'dune')")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT n, {sql} FROM generate_series(0, 300) n", [tsquery_literal("kestrel")])  # noqa: S608
        counts = dict(cursor.fetchall())
    # Exact up to 255; PostgreSQL keeps at most 256 positions per lexeme, and float4 reads 256 as 255.
    assert {n: int(c) for n, c in counts.items() if n < 256} == {n: n for n in range(256)}
    assert {int(c) for n, c in counts.items() if n >= 256} == {255}


@pytest.mark.parametrize("lexeme", ["o'brien", "c:\\temp", "e-mail", "naïve", "a b"])
def test_a_lexeme_becomes_one_tsquery_term_verbatim(lexeme):
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::tsquery, array_length(tsvector_to_array(array_to_tsvector(ARRAY[%s])), 1), "
                       "array_to_tsvector(ARRAY[%s]) @@ %s::tsquery",
                       [tsquery_literal(lexeme), lexeme, lexeme, tsquery_literal(lexeme)])
        query, _, matches = cursor.fetchone()
    assert matches, f"{lexeme!r} as {query!r} does not match itself"
    assert query.count("'") - 2 * lexeme.count("'") == 2  # one quoted term, not several
