"""Webhook sources: who may post memories to /v1/ingest/webhook/<source_id>, into which bank."""

from __future__ import annotations

from django.db import models

from banks.models.banks import Bank


class WebhookSource(models.Model):
    source_id = models.SlugField(max_length=64, unique=True)
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="webhook_sources")
    # The shared HMAC key; it must be readable to verify signatures, so only administrators see it.
    secret = models.CharField(max_length=200)
    enabled = models.BooleanField(default=True)
    # How deliveries are signed (banks.live.webhooks): "timestamped" (timestamp + replay protection) or
    # "body" (Astrocyte's and GitHub's HMAC of the raw body, in ``signature_header``).
    signature_scheme = models.CharField(
        max_length=16, choices=[("timestamped", "timestamped (X-Webhook-Timestamp + X-Webhook-Signature)"),
                                ("body", "body HMAC in one header (Astrocyte, GitHub)")],
        default="timestamped", db_default="timestamped")
    signature_header = models.CharField(
        max_length=100, default="X-Astrocyte-Signature", db_default="X-Astrocyte-Signature",
        help_text="the header carrying the body signature (body scheme), e.g. X-Hub-Signature-256")
    tags = models.JSONField(default=list, blank=True, help_text="tags added to every memory from this source")
    created_at = models.DateTimeField(auto_now_add=True)
    # What /health/ingest reports: the last accepted delivery and the last refused one, with why.
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    delivery_count = models.BigIntegerField(default=0)
    error_count = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["source_id"]

    def __str__(self) -> str:
        return f"webhook {self.source_id} -> {self.bank_id}"


class WebhookDelivery(models.Model):
    """A signature already accepted: the same signed request is refused if it comes again."""

    source = models.ForeignKey(WebhookSource, on_delete=models.CASCADE, related_name="deliveries")
    signature = models.CharField(max_length=128)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "signature"], name="webhook_delivery_once")]

    def __str__(self) -> str:
        return f"delivery to {self.source_id} at {self.received_at}"
