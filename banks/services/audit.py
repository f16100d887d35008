"""The audit log: every mutation writes exactly one event through ``audit_record``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.utils import timezone

from banks.models import AuditEvent, Bank
from memoryhub.input_rules import check_text

# An event lists at most this many target ids; the full count goes in details.
MAX_TARGET_IDS = 1000


def audit_record(
    *,
    actor: str,
    action: str,
    bank: Bank | None = None,
    target_ids: Iterable[str] = (),
    reason: str = "",
    compliance: bool = False,
    details: dict[str, Any] | None = None,
    bank_ref: str | None = None,
) -> AuditEvent:
    # Reasons arrive from every surface (forms, API, commands); the column cannot hold NUL.
    check_text(reason or "", "reason")
    targets = [str(t) for t in target_ids]
    details = dict(details or {})
    if len(targets) > MAX_TARGET_IDS:
        details.setdefault("target_count", len(targets))
        targets = targets[:MAX_TARGET_IDS]
    if bank is not None and bank.is_never_written:
        # A forget or delete aimed at a bank that holds nothing yet: recorded by id, no row to point at.
        bank_ref = bank_ref if bank_ref is not None else bank.bank_id
        bank = None
    event = AuditEvent(
        bank=bank,
        bank_ref=bank_ref if bank_ref is not None else (bank.bank_id if bank else ""),
        actor=actor or "system",
        action=action,
        target_ids=targets,
        reason=reason or "",
        compliance=compliance,
        details=details,
        created_at=timezone.now(),
    )
    _insert(event)
    return event


_COLUMNS = ("bank_id", "bank_ref", "actor", "action", "target_ids", "reason", "compliance", "details", "created_at")


def _insert(event: AuditEvent) -> None:
    """The row written out: every write records one, and composing the ORM's insert cost more than it."""
    fields = [AuditEvent._meta.get_field(name.removesuffix("_id") if name == "bank_id" else name) for name in _COLUMNS]
    params = [field.get_db_prep_save(getattr(event, field.attname), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO banks_auditevent ({', '.join(_COLUMNS)}) "  # noqa: S608  (fixed names)
                       f"VALUES ({', '.join(['%s'] * len(_COLUMNS))}) RETURNING id", params)
        event.pk = cursor.fetchone()[0]
    event._state.adding = False
    event._state.db = connection.alias
