"""Per-operator preferences for the curation pages."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OperatorPreference(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="curation_pref")
    # An IANA zone name; every date on the operator's pages is shown in it.
    time_zone = models.CharField(max_length=64, default="UTC")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user} ({self.time_zone})"
