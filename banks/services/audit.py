"""The audit log: every mutation writes exactly one event through ``audit_record``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from banks.models import AuditEvent, Bank
from banks.models.rows import insert_row
from memoryhub.input_rules import check_text
from memoryhub.replica import note_bank_write

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
    # Written out: every write records one, and composing the ORM's insert cost more than running it.
    (event.pk,) = insert_row(event, _COLUMNS)
    if bank is not None:
        note_bank_write(bank.pk)  # every write passes here: recall of the bank then reads its own writes
    return event


_COLUMNS = ("bank", "bank_ref", "actor", "action", "target_ids", "reason", "compliance", "details", "created_at")
