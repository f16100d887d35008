"""The keyword arm of recall: Okapi BM25 inside PostgreSQL, on the GIN full-text index.

``ts_rank`` knows nothing of how rare a word is, so a question's common words outweigh the
one word that matters. Here every query lexeme gets an inverse document frequency from the
bank itself and documents are scored with BM25 (k1 = 1.2, b = 0.75) from the term counts the
``search_vector`` already holds (one position per occurrence). A conversation turn indexed with its
context (banks.turn_context) is read from its ``context_vector`` instead (its text and its context, a
GIN index of its own): ``DOC`` and ``matching`` below, used by every statement here.

Cost stays bounded:
- document frequencies of all query lexemes are counted in one statement, each count capped
  at ``COMMON_DF`` rows of the bank in the GIN index (which leads with the bank, so another
  tenant's rows are skipped, not walked); a lexeme past the cap is "common" and its frequency is
  estimated from its share of the bank's newest ``RECENT_SAMPLE`` memories (never from the whole
  table's statistics, which a big neighbour's vocabulary dominates);
- only rare lexemes select candidates (when every lexeme is common, a bounded sample does),
  and at most ``MAX_CANDIDATES`` rows are scored, rows holding two or more of those lexemes
  first (``_candidates_sql``); every query lexeme still counts in the score;
- the bank's size and average document length are kept for a few minutes (per process, see
  recall_memo), and so are the frequencies of lexemes in at least ``MEMO_DF`` rows: counting
  those is what costs (up to COMMON_DF index entries each), and a few minutes' drift only nudges
  their weight. Rarer lexemes are counted on every question, so a memory retained a moment ago
  is found by its rare words at once;
- big banks keep those frequencies in the database (banks.models.text_statistics), so a word's
  first question in a process does not count it either.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django.db import transaction
from psycopg import ClientCursor

from banks.models import Bank
from banks.models.text_statistics import LEXEME_MIN_DOCUMENTS
from banks.selectors.recall_memo import TtlMemo
from banks.text_search import bank_language, config_name
from memoryhub.replica import read_connection

K1 = 1.2
B = 0.75
# A lexeme in more rows than this is "common": it no longer selects candidates.
COMMON_DF = 2000
MAX_CANDIDATES = 4000
# A common lexeme's frequency is its share of this many of the bank's newest memories, times the bank's size.
RECENT_SAMPLE = 2000
# Rows holding one question word scored beside enough rows holding two or more (see _candidates_sql).
ONE_WORD_SHARE = 200
# Past this many selecting lexemes the pairs would be too many: candidates are then taken as they come.
MAX_PAIRED_LEXEMES = 8
STATS_SECONDS = 300
# Document frequencies at or above this are kept per process for STATS_SECONDS (big banks store them).
MEMO_DF = LEXEME_MIN_DOCUMENTS
_WORD = re.compile(r"\w+", re.UNICODE)
# A row's document: its text, with its context for a conversation turn.
DOC = "coalesce({a}.context_vector, {a}.search_vector)"


def matching(query_sql: str, alias: str = "m") -> str:
    """Rows whose document matches ``query_sql``, through both GIN indexes (a row's context vector holds
    all of its text's lexemes: matching either is matching its document)."""
    return f"({alias}.search_vector @@ {query_sql} OR {alias}.context_vector @@ {query_sql})"


_STATS = TtlMemo(STATS_SECONDS, max_entries=10_000)
_FREQUENT = TtlMemo(STATS_SECONDS)
_LEXEMES = TtlMemo(STATS_SECONDS, max_entries=10_000)


def keyword_query_text(query: str) -> str:
    """Any of the query's words may match (OR-joined; stop words drop out when stemmed)."""
    return " or ".join(w for w in _WORD.findall(query) if w.lower() != "or")


def query_lexemes(cursor: Any, query: str, search_config: str = config_name(None)) -> list[str]:
    """The question's lexemes through the same configuration as the bank's rows (stemmed, unaccented).

    Kept per word (the parser reads each word on its own once punctuation is gone), so a question made
    of words seen before needs no statement."""
    words = list(dict.fromkeys(_WORD.findall(query)))
    if not words:
        return []
    known: dict[str, tuple[str, ...]] = {}
    unknown: list[str] = []
    for word in words:
        lexemes = _LEXEMES.get((search_config, word))
        if lexemes is None:
            unknown.append(word)
        else:
            known[word] = lexemes
    if unknown:
        cursor.execute("SELECT w, array(SELECT unnest(tsvector_to_array(to_tsvector(%s::regconfig, w)))) "
                       "FROM unnest(%s::text[]) AS w", [search_config, unknown])
        for word, lexemes in cursor.fetchall():
            known[word] = tuple(lexemes or ())
            _LEXEMES.set((search_config, word), known[word])
    return list(dict.fromkeys(lexeme for word in words for lexeme in known[word]))


def bank_text_stats(cursor: Any, bank: Bank) -> tuple[int, float]:
    """(live rows, average distinct lexemes per row) of the bank, kept for a few minutes."""
    key = ("stats", bank.pk)
    cached = _STATS.get(key)
    if cached is not None:
        return cached
    cursor.execute("SELECT count(*) FROM banks_memory WHERE bank_id = %s AND archived_at IS NULL "
                   "AND forgotten_at IS NULL", [bank.pk])
    total = int(cursor.fetchone()[0])
    # The average length from the newest rows (through the bank/retained_at index): bounded at any size.
    cursor.execute(f"SELECT avg(length({DOC.format(a='s')})) FROM (SELECT search_vector, context_vector "  # noqa: S608
                   "FROM banks_memory "
                   "WHERE bank_id = %s ORDER BY retained_at DESC, id DESC LIMIT 2000) s", [bank.pk])
    avg = float(cursor.fetchone()[0] or 1.0)
    stats = (total, max(avg, 1.0))
    _STATS.set(key, stats)
    return stats


# Plain index scans and sequential scans, off for the statements of postings_query (see there).
_SCANS_OFF = ("enable_indexscan", "enable_seqscan")
# Sent before the statement in the same message: one implicit transaction, so the settings end with it.
SCANS_OFF_PREFIX = "".join(f"SET LOCAL {name} = off; " for name in _SCANS_OFF)
_SET_OFF = ("SELECT " + ", ".join(f"current_setting('{name}')" for name in _SCANS_OFF) + ", "
            + ", ".join(f"set_config('{name}', 'off', true)" for name in _SCANS_OFF))
_PUT_BACK = "SELECT " + ", ".join(f"set_config('{name}', %s, true)" for name in _SCANS_OFF)


def postings_query(cursor: Any, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """The rows of a full-text statement on one bank, planned with plain index scans and sequential
    scans off: through the bank's GIN indexes.

    The planner weighs a word by the whole table's statistics, so a word frequent in a big neighbour
    looked so common in every bank that walking the bank's rows in some btree order, testing each one,
    seemed to reach the statement's LIMIT before the GIN index would: it never does where the word is
    rare in the bank (a 10,000-memory bank's candidates: 1,510 buffers that way, 312 through the GIN
    bitmap on (bank_id, search_vector)). A LIMIT the planner cannot see (the rows holding one question
    word, after those holding two) is guessed small, so it read the whole table in order for the same
    reason: on a 3,000-memory bank, 439 buffers and every row's vector tested against the question,
    against 258 through the GIN bitmap (the BM25 statement 5.9 against 1.6 ms, loaded). Off for this
    statement only: the bank's newest rows are still read in index order elsewhere.

    Outside a transaction (a recall's case) the settings go in the same message as the statement
    (``SCANS_OFF_PREFIX``, parameters bound on the client): PostgreSQL runs the message as one
    implicit transaction, which SET LOCAL ends with. One statement where BEGIN, the settings, the
    statement and COMMIT were four: 0.06-0.1 ms of the web worker's CPU less a call, the database's
    level (bench/keyword_settings_bench.py, docs/benchmarks.md "Load"). Inside a caller's transaction they
    are set and put back around the statement (a failed statement's savepoint undoes them)."""
    db = cursor.db
    # Client-side binding sends the simple query protocol, which takes several statements in one message.
    if db.get_autocommit() and isinstance(getattr(cursor, "cursor", None), ClientCursor):
        cursor.execute(SCANS_OFF_PREFIX + sql, params)
        for _ in _SCANS_OFF:
            cursor.nextset()  # past each SET's empty result
        return list(cursor.fetchall())
    outer = db.in_atomic_block
    with transaction.atomic(using=db.alias):
        cursor.execute(_SET_OFF)
        before = cursor.fetchone()[:len(_SCANS_OFF)]
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        if outer:
            cursor.execute(_PUT_BACK, list(before))
    return list(rows)


def _recent_shares(cursor: Any, bank: Bank, lexemes: list[str]) -> dict[str, float]:
    """The share of the bank's newest RECENT_SAMPLE live memories holding each lexeme (one statement).

    The bank's own figure, read through its (bank, retained_at) index: bounded whatever the bank's
    size, and nothing another tenant writes changes it."""
    cursor.execute(
        "WITH recent AS MATERIALIZED (SELECT coalesce(context_vector, search_vector) AS v FROM banks_memory "
        "WHERE bank_id = %s "
        "AND archived_at IS NULL AND forgotten_at IS NULL ORDER BY retained_at DESC, id DESC LIMIT %s) "
        "SELECT l.lexeme, (SELECT count(*) FROM recent WHERE v @@ l.query::tsquery)::float8 "
        "/ greatest((SELECT count(*) FROM recent), 1) FROM unnest(%s::text[], %s::text[]) AS l(lexeme, query)",
        [bank.pk, RECENT_SAMPLE, lexemes, [tsquery_literal(lx) for lx in lexemes]])
    return {str(lexeme): float(share) for lexeme, share in cursor.fetchall()}


def document_frequencies(cursor: Any, bank: Bank, lexemes: list[str], total: int) -> dict[str, int]:
    """Each lexeme's document frequency in the bank: exact up to COMMON_DF, estimated past it.

    Frequent lexemes come from the per-process memo, or from the bank's stored lexeme counts
    (banks.models.text_statistics, kept for big banks) scaled to its size now; the others are
    counted, all in one statement."""
    config = config_name(bank_language(bank.config))
    counts: dict[str, int] = {}
    unknown: list[str] = []
    for lexeme in lexemes:
        known = _FREQUENT.get((bank.pk, config, lexeme))
        if known is None:
            unknown.append(lexeme)
        else:
            counts[lexeme] = known
    if not unknown:
        return counts
    # A stored count is used only when it was taken in the bank's current language; a lexeme without
    # one is counted (CASE runs the count only then), with the very tsquery that selects and scores it.
    rows = postings_query(
        cursor,
        "WITH t AS (SELECT live_rows FROM banks_banktextstatistics WHERE bank_id = %s AND search_config = %s) "  # noqa: S608  (matching(): fixed clauses)
        "SELECT l.lexeme, s.documents, (SELECT live_rows FROM t), CASE WHEN s.documents IS NULL THEN "
        "(SELECT count(*) FROM (SELECT 1 FROM banks_memory m WHERE bank_id = %s::bigint "
        f"AND {matching('l.query::tsquery')} AND archived_at IS NULL AND forgotten_at IS NULL "
        "LIMIT %s) c) END FROM unnest(%s::text[], %s::text[]) AS l(lexeme, query) "
        "LEFT JOIN banks_banklexeme s ON s.bank_id = %s AND s.lexeme = l.lexeme AND EXISTS (SELECT 1 FROM t)",
        [bank.pk, config, bank.pk, COMMON_DF + 1, unknown, [tsquery_literal(lx) for lx in unknown], bank.pk],
    )
    counted: dict[str, int] = {}
    for lexeme, stored, counted_over, n in rows:
        if stored is not None:
            # The bank grew or shrank since it was counted: the word most likely did in proportion.
            counts[lexeme] = max(1, round(int(stored) * total / max(int(counted_over or 0), 1)))
        else:
            counted[lexeme] = int(n)
    common = [lexeme for lexeme, n in counted.items() if n > COMMON_DF]
    if common:
        shares = _recent_shares(cursor, bank, common)
        for lexeme in common:
            counted[lexeme] = max(counted[lexeme], round(shares.get(lexeme, 0.0) * total))
    for lexeme, n in counted.items():
        if n >= MEMO_DF:
            _FREQUENT.set((bank.pk, config, lexeme), n)
    return {**counts, **counted}


def idf(df: int, total: int) -> float:
    """BM25's inverse document frequency (the +1 keeps it positive for words in most rows)."""
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


# How many times a lexeme occurs in a row (its positions), computed in C rather than by unnesting the
# row's vector: with unit weights and one lexeme, ts_rank is sum(1/j^2 for j <= count) / (pi^2 / 6), so
# count = round(1 / ((pi^2 / 6) * (1 - rank)) - 1/2): exact up to 255 (a vector keeps at most 256
# positions per lexeme, read as 255 in ts_rank's float4; pinned by tests/banks/test_recall_keyword_counts.py),
# and 0 where the lexeme is absent (rank 0). Scoring thousands of candidates this way costs a third of the unnest-and-join.
_TERM_COUNT = "round(1 / (1.6449340668482264 * (1 - ts_rank('{1,1,1,1}', c.v, %s::tsquery)::float8)) - 0.5)"


def tsquery_literal(lexeme: str) -> str:
    """A one-lexeme tsquery, taken verbatim (no parser splits it): quoted, with quotes and backslashes escaped."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _or_query(lexemes: list[str]) -> str:
    # Each lexeme as a one-lexeme tsquery (tsquery_literal); || ORs them.
    return " || ".join(["%s::tsquery"] * len(lexemes))


def matching_two_or_more(lexemes: list[str]) -> str:
    """A tsquery matching rows that hold at least two of ``lexemes``: every pair ANDed, the pairs ORed."""
    quoted = [tsquery_literal(lx) for lx in lexemes]
    return " | ".join(f"({a} & {b})" for i, a in enumerate(quoted) for b in quoted[i + 1:])


def _candidates_sql(selecting: list[str], where: str, params: list[Any], limit: int) -> tuple[str, list[Any]]:
    """The rows worth scoring (id, search vector as ``v``), at most MAX_CANDIDATES of them.

    Rows holding two or more of the selecting lexemes come first; rows holding one fill the rest.
    When the first kind alone gives ``limit`` rows, only ONE_WORD_SHARE rows of the second are
    scored: those rarely outrank the first, and on a bank where every question word is common they
    were thousands of rows scored for nothing (a sample of them still competes).
    """
    any_sql = _or_query(selecting)
    if len(selecting) < 2 or len(selecting) > MAX_PAIRED_LEXEMES:
        return (f"SELECT m.id, {DOC.format(a='m')} AS v FROM banks_memory m "  # noqa: S608  (vetted as above)
                f"WHERE {matching(f'({any_sql})')} AND {where} LIMIT %s",
                [*[tsquery_literal(lx) for lx in selecting] * 2, *params, MAX_CANDIDATES])
    several = matching_two_or_more(selecting)
    sql = (
        f"WITH several AS (SELECT m.id, {DOC.format(a='m')} AS v FROM banks_memory m "  # noqa: S608  (vetted)
        f"WHERE {matching('%s::tsquery')} AND {where} LIMIT %s), "
        f"n AS (SELECT count(*) AS n FROM several) "
        f"SELECT id, v FROM several UNION ALL ("
        f"SELECT m.id, {DOC.format(a='m')} FROM banks_memory m "
        f"WHERE {matching(f'({any_sql})')} AND NOT {DOC.format(a='m')} @@ %s::tsquery AND {where} "
        f"LIMIT (SELECT CASE WHEN n >= %s THEN %s ELSE %s - n END FROM n))"
    )
    anyof = [tsquery_literal(lx) for lx in selecting]
    return sql, [several, several, *params, MAX_CANDIDATES, *anyof, *anyof, several, *params,
                 limit, ONE_WORD_SHARE, MAX_CANDIDATES]


def keyword_arm(bank: Bank, query: str, where: str, params: list[Any], limit: int) -> list[tuple[int, float]]:
    """(memory pk, BM25 score) best first; ``where``/``params`` are the recall filters on alias ``m``."""
    with read_connection().cursor() as cursor:
        lexemes = query_lexemes(cursor, query, config_name(bank_language(bank.config)))
        if not lexemes:
            return []
        total, avg_len = bank_text_stats(cursor, bank)
        dfs = document_frequencies(cursor, bank, lexemes, max(total, 1))
        present = [lx for lx in lexemes if dfs.get(lx, 0) > 0]
        if not present:
            return []
        weights = [idf(dfs[lx], max(total, dfs[lx])) for lx in present]
        rare = [lx for lx in present if dfs[lx] <= COMMON_DF]
        selecting = rare or present
        # The row's length normalisation, once per row and in float8: written per term, ``0.75 * length``
        # was numeric arithmetic (a numeric literal times an integer) repeated for every query lexeme.
        norm = f"{K1}::float8 * ({1 - B}::float8 + {B}::float8 * length(c.v)::float8 / %s::float8)"
        # One term per query lexeme; a lexeme the row lacks has a count of 0 and adds nothing.
        terms = " + ".join(f"%s::float8 * s.t{i} * {K1 + 1}::float8 / (s.t{i} + s.norm)" for i in range(len(present)))
        counts = ", ".join(f"{_TERM_COUNT} AS t{i}" for i in range(len(present)))
        candidates, candidate_params = _candidates_sql(selecting, where, params, limit)
        # Vetted: {terms}/{counts}/{norm} are built above from placeholders, indexes and module floats,
        # {candidates} by _candidates_sql from placeholders and fixed clauses; values are parameters.
        # OFFSET 0 keeps the counts computed once per row (a flattened subquery would repeat them per use).
        sql = (
            f"SELECT s.id, {terms} AS score FROM ("  # noqa: S608
            f"SELECT c.id, {norm} AS norm, {counts} FROM ({candidates}) c OFFSET 0) s "
            f"ORDER BY score DESC, s.id DESC LIMIT %s"
        )
        rows = postings_query(cursor, sql, [*weights, avg_len, *(tsquery_literal(lx) for lx in present),
                                            *candidate_params, limit])
        return [(r[0], float(r[1])) for r in rows]
