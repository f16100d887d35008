"""A bank's keyword arm is scoped to the bank before it reads anything: another tenant's words change
neither what it reads nor how it weighs them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from banks.content import content_hash
from banks.models import Memory
from banks.providers import get_embedder
from banks.selectors import recall_keyword
from banks.selectors.recall import RecallFilters, recall_memories
from banks.selectors.recall_memo import clear_recall_memos

pytestmark = pytest.mark.django_db


def _store(bank, texts: list[str]) -> None:
    embedder = get_embedder()
    now = timezone.now()
    Memory.objects.bulk_create([
        Memory(bank=bank, memory_id=f"{bank.bank_id}-{i}", text=text, retained_at=now, created_at=now,
               content_hash=content_hash(text), embedding=embedder.embed_one(text), embedding_model=embedder.name,
               embedding_dims=embedder.dimensions) for i, text in enumerate(texts)], batch_size=1000)


@pytest.fixture
def tenants(make_bank):
    """A small bank, and a big neighbour whose every memory holds the words the small bank's question uses."""
    small, big = make_bank("small"), make_bank("neighbour")
    _store(small, [f"quartz {'zephyr ' if i % 10 == 0 else ''}note {i}" for i in range(200)])
    _store(big, [f"zephyr lantern harbour note {i}" for i in range(3000)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
    clear_recall_memos()
    return small, big


def _keyword_plans(bank, query: str) -> list[str]:
    statements = []

    def capture(execute, sql, params, many, context):
        if "@@" in sql and "banks_memory" in sql and "EXPLAIN" not in sql:
            statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(capture):
        hits, *_ = recall_memories(bank, query, max_results=10, filters=RecallFilters(), arms=("keyword",))
    assert hits
    if connection.get_autocommit():  # a request's case: each statement carries its scan settings
        assert all(sql.startswith(recall_keyword.SCANS_OFF_PREFIX) for sql, _ in statements)
    plans = []
    for sql, params in statements:
        with connection.cursor() as cursor:  # planned as the arm runs it: with its scan settings
            rows = recall_keyword.postings_query(cursor, "EXPLAIN " + sql.removeprefix(recall_keyword.SCANS_OFF_PREFIX),
                                                 params)
            plans.append("\n".join(row[0] for row in rows))
    return plans


@pytest.mark.django_db(transaction=True)  # outside a transaction, as a request runs: settings in the statement's message
def test_the_full_text_index_scan_names_the_bank(tenants):
    small, _ = tenants
    plans = _keyword_plans(small, "zephyr lantern")
    assert plans
    for plan in plans:
        # Every full-text index scan of the bank's rows carries the bank in its own condition; none reads
        # the word's postings across every bank and then filters the bank out of the table.
        for line in plan.splitlines():
            if "memory_bank_search_gin" in line or "memory_search_gin" in line:
                assert "memory_bank_search_gin" in line, plan
        conditions = [line for line in plan.splitlines() if "Index Cond" in line and "@@" in line]
        assert all("bank_id" in line for line in conditions), plan
        # Through the GIN bitmaps: neither the table nor a btree walked in order, testing every row.
        assert "Seq Scan on banks_memory" not in plan and " Index Scan using" not in plan, plan


def test_a_common_word_is_weighed_by_the_bank_not_by_its_neighbour(tenants, monkeypatch):
    """Past the exact count, a word's frequency is the bank's own (its newest memories), never the whole
    table's statistics, which the neighbour's 3,000 memories holding it dominate."""
    small, _ = tenants
    monkeypatch.setattr(recall_keyword, "COMMON_DF", 5)  # "zephyr" is in 20 of the small bank's 200
    with connection.cursor() as cursor:
        frequencies = recall_keyword.document_frequencies(cursor, small, ["zephyr"], 200)
    assert frequencies == {"zephyr": 20}
