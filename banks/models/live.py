"""Live memory: observations with evidence, mental models (and directives) with revisions, wiki pages."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models

from banks.models.bank_scoped import BankScoped
from banks.models.banks import BANK_KEY, Bank
from banks.models.memories import GIN_PENDING_LIST_KB, EmbeddedText, Memory


class ObservationQuerySet(models.QuerySet["Observation"]):
    def live(self) -> ObservationQuerySet:
        return self.filter(deleted_at__isnull=True, invalidated_at__isnull=True)


class Observation(BankScoped, EmbeddedText):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="observations")
    observation_id = models.CharField(max_length=64)
    text = models.TextField()
    # "bank", "tag:<name>", "entity:<id>", or Astrocyte's "bank:<id>" / "a|b" tag scopes.
    scope = models.CharField(max_length=500, default="bank")
    confidence = models.FloatField(default=0.9)
    proof_count = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    invalidated_at = models.DateTimeField(null=True, blank=True)
    invalidated_reason = models.CharField(max_length=500, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True)
    memories = models.ManyToManyField(Memory, through="ObservationEvidence", related_name="observations")

    objects = ObservationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "observation_id"], name="observation_id_unique_per_bank")
        ]
        indexes = [
            # Full text leads with the bank (btree_gin), as memories' does (migrations 0026, 0032): a word
            # frequent in another tenant's observations is skipped through, not walked.
            GinIndex(fields=["bank", "search_vector"], name="observation_bank_search_gin",
                     gin_pending_list_limit=GIN_PENDING_LIST_KB),
            models.Index(fields=["bank", "scope"], name="observation_bank_scope"),
        ]

    def __str__(self) -> str:
        return self.observation_id


class ObservationEvidence(BankScoped, models.Model):
    """One memory supporting an observation, with the time the trend counts it at."""

    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    # The observation's bank, repeated for distribution by bank; a trigger fills it when an insert leaves it out.
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+", db_index=False)
    observation = models.ForeignKey(Observation, on_delete=models.CASCADE, related_name="evidence",
                                    db_constraint=False)
    memory = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.SET_NULL, db_constraint=False)
    # Kept even when the memory is forgotten, so provenance survives.
    memory_ref = models.CharField(max_length=255)
    evidence_at = models.DateTimeField()
    attached_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "observation", "memory_ref"], name="observation_evidence_unique")
        ]
        indexes = [models.Index(fields=["memory_ref"], name="evidence_memory_ref")]

    def __str__(self) -> str:
        return f"{self.memory_ref} supports {self.observation_id}"


class MentalModelKind(models.TextChoices):
    GENERAL = "general", "Mental model"
    DIRECTIVE = "directive", "Directive"


class MentalModelQuerySet(models.QuerySet["MentalModel"]):
    def live(self) -> MentalModelQuerySet:
        return self.filter(deleted_at__isnull=True)

    def models_only(self) -> MentalModelQuerySet:
        return self.exclude(kind=MentalModelKind.DIRECTIVE)

    def directives(self) -> MentalModelQuerySet:
        return self.filter(kind=MentalModelKind.DIRECTIVE)


class MentalModel(BankScoped, models.Model):
    """The current state of a mental model; every change also appends a MentalModelRevision."""

    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    Kind = MentalModelKind

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="mental_models")
    model_id = models.CharField(max_length=255)
    kind = models.CharField(max_length=32, default=MentalModelKind.GENERAL)
    title = models.CharField(max_length=500)
    scope = models.CharField(max_length=500, default="bank")
    source_ids = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    revision = models.PositiveIntegerField(default=0)
    content = models.TextField(blank=True)
    structured_doc = models.JSONField(null=True, blank=True)
    is_active = models.BooleanField(default=True, help_text="directives: applied at recall when active")
    priority = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    refreshed_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = MentalModelQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bank", "model_id"], name="mental_model_unique_per_bank")]
        indexes = [models.Index(fields=["bank", "kind", "scope"], name="mental_model_bank_kind")]

    def __str__(self) -> str:
        return f"{self.model_id} r{self.revision}"


class MentalModelRevision(BankScoped, models.Model):
    """An append-only snapshot. Never edited: reverting writes a new revision."""

    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    # The model's bank, repeated for distribution by bank; a trigger fills it when an insert leaves it out.
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+", db_index=False)
    model = models.ForeignKey(MentalModel, on_delete=models.CASCADE, related_name="revisions", db_constraint=False)
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=500)
    scope = models.CharField(max_length=500, default="bank")
    content = models.TextField(blank=True)
    structured_doc = models.JSONField(null=True, blank=True)
    source_ids = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    operations = models.JSONField(null=True, blank=True, help_text="delta operations that produced it")
    change_summary = models.JSONField(null=True, blank=True)
    action = models.CharField(max_length=32, default="create")
    author = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model", "-number"]
        constraints = [models.UniqueConstraint(fields=["bank", "model", "number"], name="revision_number_unique")]

    def __str__(self) -> str:
        return f"{self.model_id} r{self.number}"


class WikiPage(BankScoped, models.Model):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="wiki_pages")
    page_id = models.CharField(max_length=255)
    scope = models.CharField(max_length=500)
    title = models.CharField(max_length=500)
    content = models.TextField()
    source_ids = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bank", "page_id"], name="wiki_page_unique_per_bank")]

    def __str__(self) -> str:
        return self.title
