"""Who holds which role on a bank (its members page)."""

from __future__ import annotations

from django.db.models import Case, IntegerField, QuerySet, Value, When

from banks.models import Bank, BankMembership, BankRole

# Members are people, a handful per bank; the page lists at most this many.
MAX_MEMBERS = 500


def bank_members(bank: Bank) -> QuerySet[BankMembership]:
    """The bank's memberships, admins first, then curators and viewers, each by name."""
    rank = Case(When(role=BankRole.ADMIN, then=Value(0)), When(role=BankRole.CURATOR, then=Value(1)),
                default=Value(2), output_field=IntegerField())
    return (BankMembership.objects.filter(bank=bank).select_related("user")
            .annotate(rank=rank).order_by("rank", "user__username")[:MAX_MEMBERS])


def bank_membership(bank: Bank, membership_id: int) -> BankMembership | None:
    """One of ``bank``'s memberships; another bank's is None (a 404 to the caller)."""
    return BankMembership.objects.filter(bank=bank, pk=membership_id).select_related("user", "bank").first()


__all__ = ["MAX_MEMBERS", "bank_members", "bank_membership"]
