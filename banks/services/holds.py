"""Legal holds: place, release, and the guard every deleting operation calls.

A hold blocks forgetting (delete, whole-bank wipe, lifecycle deletion, bank deletion). Archiving
loses nothing and stays allowed. A compliance erase overrides holds; it names the holds it
overrode in its audit event.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from banks.access import Principal, authorize
from banks.models import Bank, LegalHold
from banks.selectors.holds import active_hold_ids
from banks.services.audit import audit_record
from memoryhub.errors import InvalidInput, LegalHoldActive
from memoryhub.input_rules import check_text

MAX_HOLD_ID = 255


def _clean(value: object, field: str, *, limit: int | None = None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("must be a non-empty string", field=field)
    check_text(value, field)
    if limit is not None and len(value) > limit:
        raise InvalidInput(f"must be at most {limit} characters", field=field)
    return value.strip()


def hold_set(*, bank: Bank, hold_id: str, reason: str, set_by: str, actor: str,
             by: Principal | None = None) -> LegalHold:
    """Place a hold. Placing an active hold id again sets it anew, as Astrocyte does: the new reason
    and setter, a new ``set_at``; the audit event keeps what it replaced. Needs ``admin``."""
    authorize(by, bank.bank_id, "admin")
    hold_id = _clean(hold_id, "hold_id", limit=MAX_HOLD_ID)
    reason = _clean(reason, "reason")
    set_by = _clean(set_by or actor, "set_by", limit=255)
    with transaction.atomic():
        existing = LegalHold.objects.active().select_for_update().filter(bank=bank, hold_id=hold_id).first()
        if existing is not None:
            replaced = {"reason": existing.reason, "set_by": existing.set_by, "set_at": existing.set_at.isoformat()}
            LegalHold.objects.filter(bank_id=existing.bank_id, pk=existing.pk).update(reason=reason, set_by=set_by, set_at=timezone.now())
            existing.refresh_from_db()
            audit_record(actor=actor, action="bank.hold_set", bank=bank, target_ids=[hold_id], reason=reason,
                         details={"hold_id": hold_id, "set_by": set_by, "replaced": replaced})
            return existing
    try:
        with transaction.atomic():
            hold = LegalHold.objects.create(bank=bank, hold_id=hold_id, reason=reason, set_by=set_by)
            audit_record(actor=actor, action="bank.hold_set", bank=bank, target_ids=[hold_id], reason=reason,
                         details={"hold_id": hold_id, "set_by": set_by})
    except IntegrityError:  # placed at the same moment by another request
        return LegalHold.objects.active().get(bank=bank, hold_id=hold_id)
    return hold


def hold_release(*, bank: Bank, hold_id: str, actor: str, reason: str = "", by: Principal | None = None) -> bool:
    """Release an active hold; False when there is none by that id. Needs ``admin``."""
    authorize(by, bank.bank_id, "admin")
    with transaction.atomic():
        hold = LegalHold.objects.active().select_for_update().filter(bank=bank, hold_id=hold_id).first()
        if hold is None:
            return False
        hold.released_at = timezone.now()
        hold.released_by = actor
        hold.save(update_fields=["released_at", "released_by"])
        audit_record(actor=actor, action="bank.hold_release", bank=bank, target_ids=[hold_id], reason=reason,
                     details={"hold_id": hold_id, "held_since": hold.set_at.isoformat(), "hold_reason": hold.reason})
    return True


def ensure_not_held(bank: Bank) -> None:
    """Refuse (423 Locked) a deleting operation on a bank under hold."""
    held = active_hold_ids(bank)
    if held:
        raise LegalHoldActive(bank.bank_id, held)


__all__ = ["ensure_not_held", "hold_release", "hold_set"]
