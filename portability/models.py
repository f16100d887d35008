"""Rows the importer keeps between batches (and between runs of a killed import)."""

from __future__ import annotations

from typing import ClassVar

from django.db import models

from banks.models import BANK_KEY, Bank
from banks.models.bank_scoped import BankScoped


class PendingLink(BankScoped, models.Model):
    """An archive link whose source or target memory is not stored yet.

    Links are written in the same transaction as the batch that carries them; one
    whose other end arrives in a later batch (or a later run, after a kill) waits
    here, by archive memory id, until both ends exist. The importer never holds the
    archive's links in memory.
    """

    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+")
    source_memory_id = models.CharField(max_length=255)
    target_memory_id = models.CharField(max_length=255)
    link_type = models.CharField(max_length=64)
    confidence = models.FloatField(default=1.0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "source_memory_id", "target_memory_id", "link_type"],
                                    name="pending_link_unique")
        ]
        indexes = [
            models.Index(fields=["bank", "source_memory_id"], name="pending_link_source"),
            models.Index(fields=["bank", "target_memory_id"], name="pending_link_target"),
        ]

    def __str__(self) -> str:
        return f"{self.source_memory_id} -{self.link_type}-> {self.target_memory_id} (pending)"
