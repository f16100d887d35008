"""Retention reads: legal holds and lifecycle policies."""

from __future__ import annotations

from django.db.models import QuerySet

from banks.models import Bank, Job, LegalHold, LifecyclePolicy


def bank_holds(bank: Bank, *, include_released: bool = False) -> QuerySet[LegalHold]:
    rows = LegalHold.objects.filter(bank=bank)
    return rows if include_released else rows.active()


def active_hold_ids(bank: Bank) -> list[str]:
    return list(LegalHold.objects.active().filter(bank=bank).order_by("set_at", "id").values_list("hold_id", flat=True))


def bank_under_hold(bank: Bank | None) -> bool:
    return bank is not None and LegalHold.objects.active().filter(bank=bank).exists()


def bank_lifecycle_policy(bank: Bank | None) -> LifecyclePolicy | None:
    return LifecyclePolicy.objects.filter(bank=bank).first() if bank is not None else None


def lifecycle_runs(bank: Bank, limit: int = 5) -> list[Job]:
    return list(Job.objects.filter(bank=bank, kind="lifecycle").order_by("-created_at", "-id")[:limit])


__all__ = ["active_hold_ids", "bank_holds", "bank_lifecycle_policy", "bank_under_hold", "lifecycle_runs"]
