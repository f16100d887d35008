"""Near-duplicate pairs found by the background scan (banks.services.duplicate_scan).

A pair is stored once, the lower primary key first, with the cosine similarity the scan measured.
The review page clusters the pairs whose memories are still live; a merge archives memories (their
pairs drop out of the page), a dismissal deletes the pairs among the dismissed memories.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.db.models import F, Q

from banks.models.bank_scoped import BankScoped
from banks.models.banks import BANK_KEY, Bank
from banks.models.memories import Memory


class DuplicatePair(BankScoped, models.Model):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="duplicate_pairs")
    memory_a = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    memory_b = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    similarity = models.FloatField()
    found_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "memory_a", "memory_b"], name="duplicate_pair_unique_per_bank"),
            models.CheckConstraint(condition=Q(memory_a__lt=F("memory_b")), name="duplicate_pair_ordered"),
        ]
        indexes = [
            # The review page reads a bank's pairs, most similar first, ties by id: in the index's own order,
            # so it stops at the pairs it shows (without the id, the 21,908 pairs of the 1M bank were all
            # read, their memories looked up, and sorted: 72 ms).
            models.Index(fields=["bank", "-similarity", "id"], name="duplicate_pair_bank_sim_id"),
        ]

    def __str__(self) -> str:
        return f"{self.memory_a_id} ~ {self.memory_b_id} ({self.similarity:.3f})"
