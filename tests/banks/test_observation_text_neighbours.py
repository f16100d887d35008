"""A bank's observations are searched by their words within the bank: their full-text index leads with
the bank (migration 0032), as the memories' does, so another tenant's postings of a word are not walked."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from banks.models import Observation

pytestmark = pytest.mark.django_db

# The bank compared as bigint, as recall's keyword arm compares it: btree_gin's bigint column takes no
# integer literal of another type into the index condition (Django's ORM writes ``bank_id = 1``, an
# int4, so an ORM filter on the bank is answered by ANDing the bank's btree with the words' GIN).
SEARCH = ("SELECT id FROM banks_observation WHERE bank_id = %s::bigint "
          "AND search_vector @@ plainto_tsquery('english', %s) AND deleted_at IS NULL")


def _observe(bank, texts: list[str]) -> None:
    now = timezone.now()
    Observation.objects.bulk_create([
        Observation(bank=bank, observation_id=f"{bank.bank_id}-{i}", text=text, created_at=now, updated_at=now)
        for i, text in enumerate(texts)], batch_size=1000)


@pytest.fixture
def tenants(make_bank):
    """A bank holding the word in 20 observations, and a neighbour holding it in 300: the word's postings
    are mostly the neighbour's."""
    small, big = make_bank("small"), make_bank("neighbour")
    _observe(small, [f"quartz {'zephyr ' if i % 100 == 0 else ''}trend {i}" for i in range(2000)])
    _observe(big, [f"{'zephyr ' if i % 10 == 0 else ''}lantern harbour trend {i}" for i in range(3000)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_observation")
    return small, big


def test_the_observation_text_index_scan_names_the_bank(tenants):
    small, _ = tenants
    with connection.cursor() as cursor:
        cursor.execute(SEARCH, [small.pk, "zephyr"])
        assert len(cursor.fetchall()) == 20
        # The plans an index of the words serves (a plain scan of the bank's btree reads only the bank's
        # rows anyway, and would win on so small a table).
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("EXPLAIN " + SEARCH, [small.pk, "zephyr"])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "observation_bank_search_gin" in plan, plan
    # The bank is in the words' index condition: the word's postings are not read across every bank
    # and the neighbour's rows dropped afterwards.
    conditions = [line for line in plan.splitlines() if "Index Cond" in line and "@@" in line]
    assert conditions and all("bank_id" in line for line in conditions), plan
