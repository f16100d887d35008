from __future__ import annotations

from django.db import models


class RateCounter(models.Model):
    """Requests one identity (a token) made in its current window, counted by the database itself.

    One row per identity: the window starts at its first request and the row is reused when it ends.
    Written only by ``banks.services.rate_limits`` with one ``INSERT ... ON CONFLICT DO UPDATE``, so
    concurrent requests from every web process add up exactly. The table is unlogged (migration 0019):
    a count lost in a crash costs nothing, and its commits then wait for no disk flush.
    """

    key = models.CharField(max_length=200, primary_key=True)
    started = models.DateTimeField()
    count = models.IntegerField()

    class Meta:
        db_table = "memoryhub_rate_counter"

    def __str__(self) -> str:
        return f"{self.key}: {self.count} since {self.started:%Y-%m-%d %H:%M:%S}"
