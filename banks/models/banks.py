from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

# Astrocyte's bank id rule (lib/_validation.py): 1-255 chars, alnum first, then [a-zA-Z0-9._:@-].
BANK_ID_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9._:@-]{0,254}$"
bank_id_validator = RegexValidator(
    BANK_ID_PATTERN,
    "must be 1-255 characters, start with a letter or digit, and contain only [a-zA-Z0-9._:@-]",
)

# The database primary key of every table that belongs to one bank (migration 0033): it leads with the bank,
# while Django knows ``id`` alone as the primary key (see banks.models). memoryhub.postgres reads it.
BANK_KEY = ("bank_id", "id")


class BankQuerySet(models.QuerySet["Bank"]):
    def active(self) -> BankQuerySet:
        return self.filter(deleted_at__isnull=True)


class Bank(models.Model):
    bank_id = models.CharField(max_length=255, unique=True, validators=[bank_id_validator])
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    embedding_provider = models.CharField(max_length=200, blank=True, help_text="empty: the server default")
    dedup_threshold = models.FloatField(default=0.95)
    # Free-form per-bank settings (auto-ingest thresholds, recall defaults...).
    config = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_activity_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # A big bank's vectors live in its own HNSW index (built after a bulk load), not the shared one.
    # Set by banks.services.vector_indexes, never by hand: its memories' rows carry the same flag.
    own_vector_index = models.BooleanField(default=False, db_default=False)

    objects = BankQuerySet.as_manager()

    class Meta:
        ordering = ["bank_id"]

    def __str__(self) -> str:
        return self.bank_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.is_never_written:
            raise RuntimeError(f"bank {self.bank_id!r} was never written; create it with bank_create")
        super().save(*args, **kwargs)

    @property
    def display_name(self) -> str:
        return self.name or self.bank_id

    # A bank id that was granted but never written: reads answer as an empty bank (as Astrocyte's
    # implicit banks do) without creating a row. Primary keys start at 1, so pk 0 matches nothing.
    NEVER_WRITTEN_PK = 0

    @classmethod
    def never_written(cls, bank_id: str) -> Bank:
        bank = cls(pk=cls.NEVER_WRITTEN_PK, bank_id=bank_id)
        bank._state.adding = False
        return bank

    @property
    def is_never_written(self) -> bool:
        return self.pk == self.NEVER_WRITTEN_PK


class BankRole(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    CURATOR = "curator", "Curator"
    ADMIN = "admin", "Admin"


class BankMembership(models.Model):
    """An operator's role on one bank in the curation UI."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="bank_memberships")
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=BankRole.choices, default=BankRole.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "bank"], name="bank_membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} on {self.bank}: {self.role}"
