"""Which tags of a bank get a vector index of their own, and the SQL that names those indexes. Pure (no database).

A walk of a bank's graph for the rows of one tag visits about ``limit / share`` entries before
``limit`` of them carry the tag: for a tag on a fifth of the bank or more that is no wider than the
walk recall makes anyway (banks.vectors.walk_breadth), so only rarer tags are worth a graph of their
own. A tag needs enough rows too: below ``min_rows`` reading them all is as quick as any walk
(banks.selectors.recall_exact).
"""

from __future__ import annotations

from psycopg import sql

# Tags on a larger share of the bank are walked in the bank's graph (see above).
MAX_SHARE = 0.2
# The tags' graphs of a bank together hold at most this many entries per row of the bank.
MAX_ENTRIES = 1.0


def choose_tags(counts: list[tuple[str, int]], bank_rows: int, *, min_rows: int,
                per_bank: int) -> list[tuple[str, int]]:
    """The ``(tag, rows)`` of ``counts`` to index: at least ``min_rows`` and at most ``MAX_SHARE`` of the
    bank's ``bank_rows``, largest first (ties by name, so a choice is stable), ``per_bank`` at most, and
    together no more entries than the bank has rows (``MAX_ENTRIES``: the tags' graphs at most double
    what the bank's vectors cost in index space; a memory with several big tags is in several)."""
    fit = sorted(((tag, rows) for tag, rows in counts if min_rows <= rows <= MAX_SHARE * bank_rows),
                 key=lambda item: (-item[1], item[0]))
    chosen: list[tuple[str, int]] = []
    entries = 0
    for tag, rows in fit:
        if len(chosen) >= per_bank:
            break
        if entries + rows <= MAX_ENTRIES * bank_rows:
            chosen.append((tag, rows))
            entries += rows
    return chosen


# A tag's index is named by its BankTagIndex row: this prefix and the row's primary key.
TAG_INDEX_PREFIX = "memory_hnsw_tag_"


def tag_index_name(index_pk: int) -> str:
    return f"{TAG_INDEX_PREFIX}{int(index_pk)}"


def tag_array_literal(tag: str) -> str:
    """``tag`` as a one-element varchar[] literal, quoted by the driver (psycopg.sql.Literal), not by
    hand: an index predicate and the clause matching it must be written out, not bound."""
    if "\x00" in tag:
        raise ValueError("a tag cannot hold a NUL character")
    return sql.SQL("ARRAY[{}]::varchar[]").format(sql.Literal(tag)).as_string(None)


def _predicate(bank_pk: int, dims: int, tag: str, alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return (f"{prefix}bank_id = {int(bank_pk)} AND {prefix}embedding_dims = {int(dims)} "
            f"AND {prefix}tags && {tag_array_literal(tag)}")


def tag_scope(bank_pk: int, dims: int, tag: str, alias: str = "") -> str:
    """The clause that sends a vector search of ``tag``'s rows in bank ``bank_pk`` to the tag's index:
    the index's predicate, written as literals so the planner can match it whatever the binding. It goes
    into a query run with parameters, where psycopg reads ``%`` as a placeholder: a tag's ``%`` is doubled."""
    return _predicate(bank_pk, dims, tag, alias).replace("%", "%%")


def tag_index_sql(index_pk: int, bank_pk: int, dims: int, tag: str, *, concurrently: bool,
                  table: str = "banks_memory") -> str:
    """The tag's index; the statement runs without parameters (its ``%`` stays as it is).

    ``table``: the bank's partition on a partitioned install (banks.partitions.bank_partition)."""
    how = "CONCURRENTLY " if concurrently else ""
    return (f"CREATE INDEX {how}IF NOT EXISTS {tag_index_name(index_pk)} ON {table} USING hnsw "
            f"((embedding::vector({int(dims)})) vector_cosine_ops) WHERE {_predicate(bank_pk, dims, tag)}")
