"""Per-bank usage counters: what bank health reports about recall and reflect.

One row per bank, written with an atomic upsert after each answer (banks.services.usage), so
concurrent requests add up instead of overwriting each other.
"""

from __future__ import annotations

from django.db import models

from banks.models.bank_scoped import BankScoped
from banks.models.banks import Bank


class BankUsage(BankScoped, models.Model):
    bank = models.OneToOneField(Bank, on_delete=models.CASCADE, primary_key=True, related_name="usage")
    recall_count = models.BigIntegerField(default=0)
    # Recalls that returned at least one hit, and the sum of their top scores (for the average).
    recall_hit_count = models.BigIntegerField(default=0)
    recall_score_sum = models.FloatField(default=0.0)
    reflect_count = models.BigIntegerField(default=0)
    # Reflects whose answer cited at least one memory.
    reflect_success_count = models.BigIntegerField(default=0)
    error_count = models.BigIntegerField(default=0)
    # Retains received over the API and MCP (not imports or sync pushes), and how many were duplicates.
    retain_call_count = models.BigIntegerField(default=0)
    retain_dedup_count = models.BigIntegerField(default=0)
    last_recalled_at = models.DateTimeField(null=True, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"usage of {self.bank_id}"
