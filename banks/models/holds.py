"""Legal holds: while a bank holds one, nothing in it may be forgotten except by a compliance erase."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from banks.models.banks import Bank


class LegalHoldQuerySet(models.QuerySet["LegalHold"]):
    def active(self) -> LegalHoldQuerySet:
        return self.filter(released_at__isnull=True)


class LegalHold(models.Model):
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="legal_holds")
    # The caller's name for the hold (Astrocyte's ``hold_id``), unique among a bank's active holds.
    hold_id = models.CharField(max_length=255)
    reason = models.TextField()
    set_by = models.CharField(max_length=255)
    set_at = models.DateTimeField(auto_now_add=True)
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.CharField(max_length=255, blank=True)

    objects = LegalHoldQuerySet.as_manager()

    class Meta:
        ordering = ["-set_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["bank", "hold_id"], condition=Q(released_at__isnull=True),
                                    name="legal_hold_active_unique"),
        ]

    def __str__(self) -> str:
        return f"hold {self.hold_id} on {self.bank_id}"
