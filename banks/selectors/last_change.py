"""When each bank last changed: the newest audit event, since every write is audited. Pages cache their
heavier numbers under this time, so an operator's own change shows on the next load."""

from __future__ import annotations

from datetime import datetime

from django.db import connection


def last_changes(bank_ids: list[int]) -> dict[int, datetime]:
    """The time of each bank's latest audited change (retains, edits, imports...): one index probe per bank."""
    if not bank_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT b.id, (SELECT a.created_at FROM banks_auditevent a WHERE a.bank_id = b.id "
                       "ORDER BY a.created_at DESC LIMIT 1) FROM unnest(%s::bigint[]) AS b(id)", [bank_ids])
        return {pk: when for pk, when in cursor.fetchall() if when}


def change_key(bank_pk: int) -> str:
    """A cache-key part that changes with the bank's latest audited change."""
    changed = last_changes([bank_pk]).get(bank_pk)
    return changed.isoformat() if changed else "-"


__all__ = ["change_key", "last_changes"]
