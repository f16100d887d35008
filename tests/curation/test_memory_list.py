"""The memory list an operator drives: paging both ways, totals, sort, facets, inline edits, search pages."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from banks.models import AuditEvent, Memory
from banks.selectors.memories import MemoryFilters, approximate_count, memory_page, memory_queryset
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


@pytest.fixture
def many(bank):
    now = timezone.now()
    for i in range(120):
        memory_retain(bank=bank, text=f"fact {i} about widget {i * 7}", actor="test", extract_entities=False,
                      near_dedup=False, source=f"src-{i % 3}", fact_type="world" if i % 2 else "experience",
                      occurred_at=now - timedelta(days=i) if i % 4 else None)
    return bank


def test_newer_links_walk_back_to_the_first_page(many):
    filters = MemoryFilters()
    first = memory_page(many, filters, limit=50)
    second = memory_page(many, filters, after=first.next_cursor, limit=50)
    assert second.prev_cursor and not first.prev_cursor
    back = memory_page(many, filters, before=second.prev_cursor, limit=50)
    assert [m.pk for m in back.rows] == [m.pk for m in first.rows]
    assert back.prev_cursor is None and back.next_cursor


def test_sort_by_occurred_lists_dated_memories_newest_first(many):
    page = memory_page(many, MemoryFilters(), sort="occurred", limit=200)
    assert len(page.rows) == 90 and all(m.occurred_at for m in page.rows)
    assert [m.occurred_at for m in page.rows] == sorted((m.occurred_at for m in page.rows), reverse=True)


def test_approximate_total_is_exact_under_the_cap_and_an_estimate_above(many):
    assert approximate_count(memory_queryset(many, MemoryFilters())) == (120, True)
    n, exact = approximate_count(memory_queryset(many, MemoryFilters()), cap=50)
    assert not exact and n > 50


def test_list_page_has_totals_facets_sources_and_paging(admin_client, many):
    page = admin_client.get("/banks/user-alice/memories/").content.decode()
    assert "120 memories match." in page
    assert '<option value="src-1">src-1</option>' in page and '<option value="experience">' in page
    assert "Older →" in page and "← Newer" not in page and "⇤ Newest" not in page
    older = re.search(r'href="\?after=([^"]+)"', page).group(1)
    second = admin_client.get(f"/banks/user-alice/memories/?after={older}").content.decode()
    assert "← Newer" in second and "⇤ Newest" in second
    assert "data-select-all" in page and "src-2" in page


def test_inline_row_edit_and_archive(admin_client, bank):
    memory = memory_retain(bank=bank, text="Row text before.", actor="test", tags=["a"]).memory
    url = f"/banks/user-alice/memories/{memory.memory_id}/row"
    editor = admin_client.get(f"{url}?edit=1", HTTP_HX_REQUEST="true").content.decode()
    assert editor.lstrip().startswith(f'<tr id="row-{memory.pk}"') and "Row text before." in editor
    bad = admin_client.post(url, {"action": "save", "text": "", "tags": "kept-typed"}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 422 and 'value="kept-typed"' in bad.content.decode()
    saved = admin_client.post(url, {"action": "save", "text": "Row text after.", "tags": "a, b"},
                              HTTP_HX_REQUEST="true").content.decode()
    assert "Row text after." in saved and "<textarea" not in saved
    memory.refresh_from_db()
    assert memory.text == "Row text after." and memory.tags == ["a", "b"]
    archived = admin_client.post(url, {"action": "archive"}, HTTP_HX_REQUEST="true").content.decode()
    assert "archived" in archived and "Restore" in archived
    assert Memory.objects.get(pk=memory.pk).archived_at is not None
    assert AuditEvent.objects.filter(action="memory.update", target_ids__contains=[memory.memory_id]).exists()


def test_search_pages_past_the_first_fifty(admin_client, many):
    first = admin_client.get("/banks/user-alice/memories/?q=widget+fact").content.decode()
    assert "Hits 1–50 of" in first and "More hits →" in first
    second = admin_client.get("/banks/user-alice/memories/?q=widget+fact&page=2").content.decode()
    assert "Hits 51–100 of" in second and "← Previous hits" in second
    assert "why #51" in second


def test_retain_error_keeps_the_typed_tags(admin_client, bank):
    response = admin_client.post("/banks/user-alice/memories/new", {"text": "   ", "tags": "typed-tag"})
    page = response.content.decode()
    assert response.status_code == 422 and 'value="typed-tag"' in page and "required" in page.lower()
