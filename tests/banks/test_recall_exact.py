"""Semantic recall reads the rows themselves where that costs less than walking a graph whose entries
the filters mostly reject; it walks when the planner expects many rows, when the bank is most of its
graph, or when the read finds the planner was wrong."""

from __future__ import annotations

import pytest
from django.db import connection

from banks.providers import bank_embedder
from banks.selectors import recall, recall_exact
from banks.selectors.recall import RecallFilters, recall_memories
from banks.selectors.recall_exact import read_beats_walk, walk_rows
from banks.services.memories import memory_retain
from banks.vectors import distance_sql, vector_literal

pytestmark = pytest.mark.django_db


walks_gathered: list[list[int]] = []


@pytest.fixture
def walks(monkeypatch):
    calls = []
    real = recall.nearest_rows

    def spy(*args, **kwargs):
        calls.append(kwargs.get("wanted"))
        gathered.append(args[1]()[-1])  # the walk's LIMIT
        return real(*args, **kwargs)

    gathered: list[int] = []
    walks_gathered.append(gathered)

    monkeypatch.setattr(recall, "nearest_rows", spy)
    return calls


@pytest.fixture
def tagged_bank(bank):
    for i in range(60):
        memory_retain(bank=bank, text=f"Field note {i}: the {'heron' if i % 2 else 'gull'} at the pier, tide {i}.",
                      actor="test", near_dedup=False, tags=["rare"] if i % 20 == 0 else ["common"])
    return bank


def exact_nearest(bank, query: str, tag: str) -> list[int]:
    embedder = bank_embedder(bank)
    distance = distance_sql(embedder.dimensions, column="embedding")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM banks_memory WHERE bank_id = %s AND tags && %s::varchar[] "  # noqa: S608
                       f"ORDER BY {distance} + 0, id DESC", [bank.pk, [tag], vector_literal(embedder.embed_one(query))])
        return [r[0] for r in cursor.fetchall()]


def test_a_filter_keeping_few_rows_is_answered_exactly_without_a_walk(tagged_bank, walks):
    rows = recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(tags=["rare"]), 10)
    assert [pk for pk, _ in rows] == exact_nearest(tagged_bank, "heron at the pier", "rare")
    assert len(rows) == 3 and walks == []
    hits, *_ = recall_memories(tagged_bank, "heron at the pier", filters=RecallFilters(tags=["rare"]))
    assert {h.memory_id for h in hits} == set(tagged_bank.memories.filter(tags__overlap=["rare"])
                                                 .values_list("memory_id", flat=True))


def test_many_expected_rows_walk_the_graph(tagged_bank, walks, settings):
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 5
    rows = recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(tags=["common"]), 10)
    assert len(rows) == 10 and walks == [10]
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 0  # off
    recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(tags=["rare"]), 10)
    assert walks == [10, 10]


def test_an_estimate_the_rows_prove_wrong_stops_the_read_and_walks(tagged_bank, walks, settings, monkeypatch):
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 5
    monkeypatch.setattr(recall_exact, "estimated_rows", lambda *args: 1.0)  # fooled: 57 rows are tagged "common"
    rows = recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(tags=["common"]), 10)
    assert len(rows) == 10 and walks == [10]
    # Fooled by less than twice the cap, the read stands: 3 rows, no walk.
    rows = recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(tags=["rare"]), 10)
    assert len(rows) == 3 and walks == [10]


def test_a_big_bank_without_a_narrowing_filter_walks_without_asking_the_planner(tagged_bank, walks, monkeypatch):
    asked = []
    monkeypatch.setattr(recall_exact, "estimated_rows", lambda *args: asked.append(args) or 1.0)
    tagged_bank.own_vector_index = True  # as after a big import (the flag is all recall reads)
    recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(), 10)
    assert asked == [] and walks == [10]
    recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(tags=["rare"]), 10)
    assert len(asked) == 1 and walks == [10]


def test_a_bank_that_is_most_of_its_graph_walks_even_without_filters(tagged_bank, walks, monkeypatch):
    # As on a server holding one 5,000-memory bank: reading all of it costs more than walking 50 entries.
    monkeypatch.setattr(recall_exact, "estimated_rows", lambda *args: 5000.0)
    monkeypatch.setattr(recall_exact, "_shared_graph_rows", lambda cursor: 5200.0)
    recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(), 10)
    assert walks == [10]
    # The same bank among a million other memories is a sliver of the graph: read.
    monkeypatch.setattr(recall_exact, "_shared_graph_rows", lambda cursor: 1_000_000.0)
    recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(), 10)
    assert walks == [10]


@pytest.mark.parametrize(("kept", "graph", "limit", "breadth", "read"), [
    (20_000, 1_000_000, 50, 400, True),     # a 2 % tag on the 1M bank: 35 ms read against 57 ms walked
    (58_000, 1_000_000, 50, 400, False),    # a 6 % tag: 96 ms read against 57 ms walked
    (12, 1_000_000, 50, 50, True),          # a dozen memories in a shared graph of a million
    (10_000, 10_000, 50, 50, False),        # a bank that is its whole graph
    (600, 600, 50, 50, True),               # ...unless it is small enough that reading is cheap anyway
    (0, 0, 50, 50, True),                   # an empty bank (statistics not yet gathered)
])
def test_reading_beats_walking_where_the_walk_would_visit_many_entries_per_row_read(kept, graph, limit, breadth,
                                                                                   read):
    assert read_beats_walk(kept, graph, limit, breadth) is read


def test_a_walk_the_filters_mostly_reject_gathers_twice_the_rows_it_keeps(tagged_bank, walks, monkeypatch, settings):
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 0  # walk
    monkeypatch.setattr(recall_exact, "_shared_graph_rows", lambda cursor: 1000.0)  # a graph of other banks' rows too
    rows = recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(tags=["rare"]), 10)
    assert len(rows) == 3 and walks_gathered[-1] == [20]
    # A bank that is most of the shared graph: no more than it needs.
    monkeypatch.setattr(recall_exact, "_shared_graph_rows", lambda cursor: 60.0)
    monkeypatch.setattr(recall_exact, "estimated_rows", lambda *args: 60.0)
    rows = recall.ARMS["semantic"](tagged_bank, "heron at the pier", RecallFilters(), 10)
    assert len(rows) == 10 and walks_gathered[-1] == [20, 10]


@pytest.mark.parametrize(("kept", "graph", "rows"), [
    (18_000, 100_000, 100),  # a bank that is a fifth of the shared graph
    (60_000, 100_000, 50),   # most of it
    (12_500, 156_000, 100),  # a time filter keeping 8 % of a bank on its own graph
    (900_000, 1_000_000, 50),  # a filter keeping most of it
])
def test_walk_rows(kept, graph, rows):
    assert walk_rows(kept, graph, 50) == rows


def test_the_planner_knows_how_much_of_a_bank_a_time_range_keeps(bank):
    from datetime import timedelta

    from django.utils import timezone

    from banks.selectors.recall import _filters_sql
    from banks.vectors import estimated_rows

    now = timezone.now()
    for day in range(200):
        memory_retain(bank=bank, text=f"Daily log {day}: nothing unusual.", actor="test", near_dedup=False,
                      occurred_at=now - timedelta(days=day))
    where, params = _filters_sql(bank, RecallFilters(time_range=(now - timedelta(days=9, hours=12), None)))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
        kept = estimated_rows(cursor, f"SELECT 1 FROM banks_memory m WHERE {where}", params)  # noqa: S608
    # 10 of 200 rows; without statistics on the expression the planner says a third of them (66).
    assert kept < 30, kept
