"""The bulk writer stores what is new and leaves out what the bank already holds."""

from __future__ import annotations

from django.contrib.postgres.search import SearchQuery
from django.db import transaction
from django.utils import timezone

from banks.content import content_hash
from banks.models import Bank, Memory
from banks.services.bulk_memories import MemoryRow
from banks.services.memory_rows import rows_insert


def _row(memory_id: str, text: str, tags: list[str] | None = None) -> MemoryRow:
    now = timezone.now()
    return MemoryRow(memory_id=memory_id, text=text, fact_type="world", memory_layer=None, tags=tags or [],
                     metadata={"k": "v, with \"quotes\"\tand a tab"}, occurred_at=None, retained_at=now,
                     created_at=now, source="import", content_hash=content_hash(text), embedding=[0.5] * 384,
                     embedding_model="hashing-384", embedding_dims=384)


def test_rows_land_with_their_fields_and_are_keyword_searchable(bank: Bank) -> None:
    with transaction.atomic():
        landed = rows_insert(bank.pk, [_row("a", "Alpha deploys on Tuesday", ["ops", "a,b"]),
                                             _row("b", "Beta line\nwith a newline and a \\ backslash")],
                                   timezone.now())
    assert set(landed) == {"a", "b"}
    alpha = Memory.objects.get(pk=landed["a"])
    assert (alpha.bank_id, alpha.tags, alpha.metadata) == (bank.pk, ["ops", "a,b"], {"k": "v, with \"quotes\"\tand a tab"})
    assert Memory.objects.get(pk=landed["b"]).text == "Beta line\nwith a newline and a \\ backslash"
    assert len(alpha.embedding) == 384
    assert list(Memory.objects.filter(bank=bank, search_vector=SearchQuery("deploy", config="english"))
                .values_list("memory_id", flat=True)) == ["a"]


def test_existing_ids_and_live_content_are_left_out(bank: Bank) -> None:
    with transaction.atomic():
        rows_insert(bank.pk, [_row("a", "first text")], timezone.now())
    with transaction.atomic():
        landed = rows_insert(bank.pk, [_row("a", "other text"), _row("b", "first text"),
                                             _row("c", "third text")], timezone.now())
    assert set(landed) == {"c"}
    assert Memory.objects.filter(bank=bank).count() == 2
    assert Memory.objects.get(bank=bank, memory_id="a").text == "first text"
