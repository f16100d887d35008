"""Reads of the per-memory access log: one memory's reads, newest first, a page at a time.

Every read names the bank and the memory, so it walks the (bank, memory_id, at, id) index and stops at
the page's end; the cursor is the last row's (at, id), so a page deep in a long log costs what the
first does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from banks.models import Bank, MemoryAccess

PAGE = 20


@dataclass
class AccessPage:
    rows: list[MemoryAccess]
    next_cursor: str | None  # the page after this one (older reads), None at the end


def _cursor(row: MemoryAccess) -> str:
    return f"{row.at.isoformat()}~{row.pk}"


def _parse_cursor(cursor: str | None) -> tuple[datetime, int] | None:
    """A cursor this module made, or None (a mangled one starts from the newest, never a 500)."""
    if not cursor or "~" not in cursor:
        return None
    at, _, pk = cursor.rpartition("~")
    try:
        parsed = datetime.fromisoformat(at)
    except ValueError:
        return None
    return (parsed, int(pk)) if pk.isdigit() and parsed.tzinfo is not None else None


def _accesses(bank: Bank, memory_id: str) -> QuerySet[MemoryAccess]:
    return MemoryAccess.objects.filter(bank_id=bank.pk, memory_id=memory_id).order_by("-at", "-id")


def memory_access_page(bank: Bank, memory_id: str, *, before: str | None = None,
                       limit: int = PAGE) -> AccessPage:
    rows = _accesses(bank, memory_id)
    after = _parse_cursor(before)
    if after is not None:
        at, pk = after
        rows = rows.filter(Q(at__lt=at) | Q(at=at, id__lt=pk))
    page = list(rows[:limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return AccessPage(rows=page, next_cursor=_cursor(page[-1]) if more and page else None)


def memory_access_rows(bank: Bank, memory_id: str) -> Iterator[MemoryAccess]:
    """Every kept read of the memory, newest first, streamed (the export)."""
    return _accesses(bank, memory_id).iterator(chunk_size=2000)
