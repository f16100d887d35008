"""Legal-hold reads."""

from __future__ import annotations

from django.db.models import QuerySet

from banks.models import Bank, LegalHold


def bank_holds(bank: Bank, *, include_released: bool = False) -> QuerySet[LegalHold]:
    rows = LegalHold.objects.filter(bank=bank)
    return rows if include_released else rows.active()


def active_hold_ids(bank: Bank) -> list[str]:
    return list(LegalHold.objects.active().filter(bank=bank).order_by("set_at", "id").values_list("hold_id", flat=True))


def bank_under_hold(bank: Bank | None) -> bool:
    return bank is not None and LegalHold.objects.active().filter(bank=bank).exists()


__all__ = ["active_hold_ids", "bank_holds", "bank_under_hold"]
