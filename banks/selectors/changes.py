"""The changes feed: every memory's latest state in the order it last changed, tombstones included.

A row's ``updated_at`` moves on every create, edit, archive, restore, forget and erase, so reading
rows ordered by (updated_at, id) after a cursor yields each change once. Rows younger than the
settle delay are held back: a transaction that started earlier but commits later cannot then
slip in behind a cursor a client already holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from banks.live.cursor import BadCursor, decode_cursor, encode_cursor
from banks.models import Bank, Memory
from memoryhub.errors import InvalidInput

MAX_LIMIT = 1000


@dataclass
class ChangesPage:
    changes: list[dict[str, Any]]
    next_cursor: str | None
    has_more: bool


def _change(row: Memory, bank_id: str) -> dict[str, Any]:
    head = {"id": row.memory_id, "bank_id": bank_id, "changed_at": row.updated_at.isoformat()}
    if row.forgotten_at is not None or row.archived_at is not None:
        return {**head, "deleted": True, **({"archived": True} if row.forgotten_at is None else {})}
    return {**head, "deleted": False, "text": row.text,
            "occurred_at": row.occurred_at.isoformat() if row.occurred_at else None,
            "retained_at": row.retained_at.isoformat(), "tags": list(row.tags), "fact_type": row.fact_type,
            "memory_layer": row.memory_layer, "metadata": row.metadata}


def changes_page(bank: Bank | None, *, bank_id: str, cursor: str | None, limit: int = 100,
                 settle_seconds: float | None = None) -> ChangesPage:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"must be between 1 and {MAX_LIMIT}", field="limit")
    after = None
    if cursor:
        try:
            after = decode_cursor(cursor)
        except BadCursor as exc:
            raise InvalidInput(str(exc), field="cursor") from None
    if bank is None:
        return ChangesPage(changes=[], next_cursor=cursor or None, has_more=False)
    settle = settings.MEMORYHUB_CHANGES_SETTLE_SECONDS if settle_seconds is None else settle_seconds
    rows = Memory.objects.filter(bank=bank, updated_at__lte=timezone.now() - timedelta(seconds=settle))
    if after is not None:
        rows = rows.filter(Q(updated_at__gt=after[0]) | Q(updated_at=after[0], pk__gt=after[1]))
    page = list(rows.order_by("updated_at", "pk").only(
        "pk", "memory_id", "updated_at", "forgotten_at", "archived_at", "text", "occurred_at", "retained_at",
        "tags", "fact_type", "memory_layer", "metadata")[: limit + 1])
    has_more = len(page) > limit
    page = page[:limit]
    next_cursor = encode_cursor(page[-1].updated_at, page[-1].pk) if page else (cursor or None)
    return ChangesPage(changes=[_change(r, bank.bank_id) for r in page], next_cursor=next_cursor,
                       has_more=has_more)


__all__ = ["ChangesPage", "changes_page"]
