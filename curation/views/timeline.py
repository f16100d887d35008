"""A bank's timeline: its memories by the day they happened (``occurred_at``), newest first, a page at a
time on the (bank, occurred_at, id) index; memories that say no date are counted, not placed."""

from __future__ import annotations

from datetime import date

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from banks.models import Memory
from banks.selectors.memories import MemoryFilters, approximate_count, memory_page, memory_queryset
from curation.access import operator_bank

PAGE = 100


@login_required
def timeline(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    page = memory_page(bank, MemoryFilters(), after=request.GET.get("after"), before=request.GET.get("before"),
                       limit=PAGE, sort="occurred")
    days: list[tuple[date, list[Memory]]] = []
    for memory in page.rows:
        if memory.occurred_at is None:  # sort="occurred" lists only dated memories
            continue
        day = timezone.localtime(memory.occurred_at).date()
        if days and days[-1][0] == day:
            days[-1][1].append(memory)
        else:
            days.append((day, [memory]))
    undated, undated_exact = approximate_count(memory_queryset(bank, MemoryFilters()).filter(occurred_at__isnull=True))
    return render(request, "curation/timeline.html", {
        "bank": bank, "tab": "timeline", "days": days, "next_cursor": page.next_cursor,
        "prev_cursor": page.prev_cursor, "undated": undated, "undated_exact": undated_exact})
