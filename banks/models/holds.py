"""Retention controls: legal holds (nothing may be forgotten but by a compliance erase) and lifecycle policies."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from banks.models.bank_scoped import BankScoped
from banks.models.banks import BANK_KEY, Bank


class LegalHoldQuerySet(models.QuerySet["LegalHold"]):
    def active(self) -> LegalHoldQuerySet:
        return self.filter(released_at__isnull=True)


class LegalHold(BankScoped, models.Model):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

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


class LifecyclePolicy(BankScoped, models.Model):
    """A bank's retention rules (see banks.live.lifecycle); a bank without one is never swept."""

    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, related_name="lifecycle_policy")
    enabled = models.BooleanField(default=True)
    delete_after_days = models.PositiveIntegerField(null=True, blank=True)
    archive_after_days = models.PositiveIntegerField(null=True, blank=True)
    # {"<fact type>": {"archive_after_days": n | null, "delete_after_days": n | null}}
    fact_type_overrides = models.JSONField(default=dict, blank=True)
    exempt_tags = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_run_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"lifecycle of {self.bank_id}"
