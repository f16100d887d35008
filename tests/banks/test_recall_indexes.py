"""Recall runs on its indexes: HNSW for the semantic arm, GIN for full text and tags."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.utils import timezone

from banks.content import content_hash
from banks.models import Memory
from banks.providers import get_embedder
from banks.selectors.recall import RecallFilters, recall_memories

pytestmark = pytest.mark.django_db

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember").split()


@pytest.fixture
def big_bank(make_bank):
    bank = make_bank("big")
    other = make_bank("other")
    rng = random.Random(7)
    embedder = get_embedder()
    now = timezone.now()
    rows = []
    for i in range(3000):
        text = " ".join(rng.choice(WORDS) for _ in range(12)) + f" item {i}"
        if i % 150 == 1:
            text += " zephyr"
        rows.append(Memory(
            bank=bank if i % 3 else other, memory_id=f"m{i}", text=text, tags=[rng.choice(WORDS[:5])],
            retained_at=now, created_at=now, content_hash=content_hash(text), embedding=embedder.embed_one(text),
            embedding_model=embedder.name, embedding_dims=embedder.dimensions,
        ))
    Memory.objects.bulk_create(rows, batch_size=500)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
    return bank


def captured_plans(bank, filters, query="charlie delta echo"):
    statements = []

    def capture(execute, sql, params, many, context):
        # A connection's first recall also prepares the multi-hop statement (run by EXECUTE, left out
        # like on every later recall); which test's recall comes first depends on the run's order.
        if "FROM banks_memory m" in sql and "SELECT m.id" in sql and not sql.lstrip().startswith("PREPARE"):
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        hits, *_ = recall_memories(bank, query, max_results=10, filters=filters,
                                   arms=("semantic", "keyword"))
    plans = []
    for sql, params in statements:
        with connection.cursor() as cursor:
            cursor.execute("SET hnsw.iterative_scan = relaxed_order")
            cursor.execute("EXPLAIN " + sql, params)
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return hits, plans


def test_semantic_arm_uses_the_hnsw_index(big_bank, settings):
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 0  # a bank this small is otherwise read exactly
    hits, plans = captured_plans(big_bank, RecallFilters())
    assert hits
    semantic = next(p for p in plans if "<=>" in p)
    assert "memory_hnsw_384" in semantic, semantic


def test_keyword_arm_uses_the_gin_index(big_bank):
    hits, plans = captured_plans(big_bank, RecallFilters(), query="zephyr")
    assert hits and "zephyr" in hits[0].text
    keyword = next(p for p in plans if "@@" in p)
    assert "memory_bank_search_gin" in keyword, keyword


def test_filters_do_not_starve_the_semantic_arm(big_bank):
    # Only about a fifth of the rows carry the tag; iterative scans still fill the page.
    hits, plans = captured_plans(big_bank, RecallFilters(tags=["alpha"]))
    assert len(hits) == 10
    assert all("alpha" in h.tags for h in hits)
    # PostgreSQL may walk the HNSW graph or, with a selective tag, the tags GIN index and sort
    # exactly; either way no sequential scan of the table.
    semantic = next(p for p in plans if "<=>" in p)
    assert "Seq Scan on banks_memory" not in semantic, semantic
    assert "memory_hnsw_384" in semantic or "memory_tags_gin" in semantic


def test_the_full_text_and_tag_indexes_keep_a_small_pending_list(db):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reloptions FROM pg_class WHERE relname IN ('memory_bank_search_gin', 'memory_tags_gin')")
        options = dict(cursor.fetchall())
    assert options == {name: ["gin_pending_list_limit=256"] for name in ("memory_bank_search_gin", "memory_tags_gin")}
