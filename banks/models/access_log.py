"""Who read which memory, when, and through which surface (recall, reflect, history as of a moment, an operator's search).

Its own table, written only by ``banks.services.access_log`` (buffered with the usage counters, one
INSERT per flush) and pruned by age (``MEMORYHUB_ACCESS_LOG_DAYS``). It names memories by their id in
the bank, not by a key: a row outlives an erased memory until it ages out, and writing it touches no
memory row.
"""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.indexes import BrinIndex
from django.db import models

from banks.models.banks import BANK_KEY, Bank


class MemoryAccess(models.Model):
    KINDS = ("recall", "reflect", "history", "search")
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    id = models.BigAutoField(primary_key=True)
    # No FK constraint: the log is written by a background flush that must never wait on, or fail
    # for, a bank being deleted; bank deletion removes its rows a chunk at a time first.
    bank = models.ForeignKey(Bank, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+",
                             db_index=False)
    memory_id = models.CharField(max_length=255)
    at = models.DateTimeField()
    kind = models.CharField(max_length=16)
    surface = models.CharField(max_length=16)
    reader = models.CharField(max_length=200)

    class Meta:
        indexes = [
            # The memory page: one memory's accesses, newest first.
            models.Index(fields=["bank", "memory_id", "-at", "-id"], name="banks_access_memory_at"),
            # The prune: rows are appended in time order, so a block range index finds the old ones cheaply.
            BrinIndex(fields=["at"], name="banks_access_at_brin"),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} {self.kind} by {self.reader} at {self.at}"
