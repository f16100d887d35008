"""Bookkeeping records: the audit log, API tokens and background jobs."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

from banks.models.banks import Bank


class AuditEvent(models.Model):
    """One mutation. Never updated or deleted by the application."""

    bank = models.ForeignKey(Bank, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events")
    # Kept as text so the record outlives the bank.
    bank_ref = models.CharField(max_length=255, blank=True, db_index=True)
    actor = models.CharField(max_length=255)
    action = models.CharField(max_length=64, db_index=True)
    target_ids = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    reason = models.TextField(blank=True)
    compliance = models.BooleanField(default=False)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["bank", "-created_at"], name="audit_bank_created"),
            # The audit page filtered by bank id (kept as text, so it outlives the bank), newest first.
            models.Index(fields=["bank_ref", "-created_at", "-id"], name="audit_bank_ref_created"),
            GinIndex(fields=["target_ids"], name="audit_target_ids_gin"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.bank_ref}"


class ApiToken(models.Model):
    """A bearer token. Only a SHA-256 hash of the secret is stored.

    ``grants`` is a list of ``{"bank": "<bank id or glob>", "permissions": [...]}``
    with permissions among read, write, forget, admin.
    """

    name = models.CharField(max_length=200)
    # Who calls with it, as Astrocyte's token records name it ("user:alice", "agent:triage"); stamped
    # on what it retains (metadata ``_actor``) so a DSAR for that principal finds it. Empty: "token:<prefix>".
    principal = models.CharField(max_length=200, blank=True, default="")
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    grants = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix})"


class JobState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class Job(models.Model):
    """Long work run by a Celery worker; the row is the source of truth for progress."""

    State = JobState
    FINISHED = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)

    kind = models.CharField(max_length=32, db_index=True)
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED, db_index=True)
    bank = models.ForeignKey(Bank, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    created_by = models.CharField(max_length=255, blank=True)
    params = models.JSONField(default=dict, blank=True)
    progress_done = models.BigIntegerField(default=0)
    progress_total = models.BigIntegerField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    result = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # What a running job is doing now ("loading", "filling vectors", "building index"…), beaten by its pulse.
    # The default lives in the database too: the previous release's code inserts jobs without the column.
    phase = models.CharField(max_length=64, blank=True, default="", db_default="")
    # The job that continues this failed one (one resume per failed job); no index: looked up by this row.
    resumed_by = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} {self.state}"

    @property
    def is_finished(self) -> bool:
        return self.state in self.FINISHED

    @property
    def percent(self) -> int | None:
        if not self.progress_total:
            return None
        return min(100, int(100 * self.progress_done / self.progress_total))
