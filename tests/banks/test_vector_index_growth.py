"""A bank of the shared vector graph that grows to MEMORYHUB_OWN_VECTOR_INDEX_ROWS moves onto its own index
(the periodic pass), and its graph is walked as wide as its size needs."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.utils import timezone

from banks.content import content_hash
from banks.models import Memory
from banks.providers import get_embedder
from banks.selectors.recall import recall_memories
from banks.services.memories import memory_retain
from banks.services.vector_indexes import bank_vector_indexes_grow
from banks.vectors import (
    INDEX_OWN,
    INDEX_SHARED,
    OWN_GRAPH_SHARE,
    bank_index_name,
    vector_index_state,
    walk_breadth,
)

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember").split()


def _fill(bank, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    embedder = get_embedder()
    now = timezone.now()
    texts = [" ".join(rng.choice(WORDS) for _ in range(10)) + f" note {i}" for i in range(n)]
    Memory.objects.bulk_create([
        Memory(bank=bank, memory_id=f"m{i}", text=text, retained_at=now, created_at=now,
               content_hash=content_hash(text), embedding=embedder.embed_one(text), embedding_model=embedder.name,
               embedding_dims=embedder.dimensions) for i, text in enumerate(texts)], batch_size=500)
    return texts


def _semantic_plan(bank, query: str) -> str:
    statements = []

    def capture(execute, sql, params, many, context):  # noqa: ANN001, ANN202
        if "<=>" in sql and "FROM banks_memory m" in sql and "ORDER BY" in sql:
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        recall_memories(bank, query, max_results=5, arms=("semantic",))
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        cursor.execute("EXPLAIN " + statements[0][0], statements[0][1])
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort")
    return plan


@pytest.mark.django_db(transaction=True)
def test_a_bank_grown_past_the_size_moves_onto_its_own_index(make_bank, settings):
    settings.MEMORYHUB_OWN_VECTOR_INDEX_ROWS = 300
    settings.MEMORYHUB_EXACT_SEARCH_ROWS = 0  # banks this small are otherwise read exactly, without a walk
    grown, small = make_bank("grown"), make_bank("small")
    texts = _fill(grown, 320, seed=3)
    _fill(small, 120, seed=5)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
    assert vector_index_state(grown.pk) == INDEX_SHARED

    assert bank_vector_indexes_grow() == [grown.pk]
    grown.refresh_from_db()
    small.refresh_from_db()
    assert grown.own_vector_index and not small.own_vector_index
    assert not Memory.objects.filter(bank=grown, own_vector_index=False).exists()
    assert vector_index_state(grown.pk) == INDEX_OWN and vector_index_state(small.pk) == INDEX_SHARED
    assert bank_index_name(grown.pk) in _semantic_plan(grown, texts[7])
    hits, *_ = recall_memories(grown, texts[7], max_results=3, arms=("semantic",))
    assert hits[0].text == texts[7]
    # Later retains land in its graph; a second pass has nothing to move.
    retained = memory_retain(bank=grown, text="zulu yankee xray whiskey a brand new memory", actor="test")
    assert Memory.objects.get(pk=retained.memory.pk).own_vector_index
    assert bank_vector_indexes_grow() == []


def test_a_small_own_graph_is_walked_narrower_than_a_big_one(settings):
    settings.MEMORYHUB_OWN_INDEX_EF_SEARCH = 600
    assert walk_breadth(50, own=False, graph_rows=1_000_000) == 50
    assert walk_breadth(50, own=True) == 600
    assert walk_breadth(50, own=True, graph_rows=1_000_000) == 600
    assert walk_breadth(50, own=True, graph_rows=5_000) == 5_000 // OWN_GRAPH_SHARE
    assert walk_breadth(50, own=True, graph_rows=300) == 50  # never narrower than what is asked
