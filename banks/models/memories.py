from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from pgvector.django import VectorField

from banks.models.bank_scoped import BankScoped
from banks.models.banks import BANK_KEY, Bank

# Dimensions that get their own HNSW index (partial, on a cast of the untyped column).
INDEXED_DIMENSIONS = (384, 768, 1024, 1536)

GIN_PENDING_LIST_KB = 256


class EmbeddedText(models.Model):
    """A ``text`` with its embedding (any size; see banks.vectors) and a generated full-text vector."""

    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    embedding_dims = models.PositiveSmallIntegerField(null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        abstract = True


class RegConfigField(models.TextField):
    """A PostgreSQL ``regconfig``: the name of a text search configuration, checked by the database."""

    def db_type(self, connection: object) -> str:
        return "regconfig"


class MemoryQuerySet(models.QuerySet["Memory"]):
    def for_bank(self, bank: Bank) -> MemoryQuerySet:
        return self.filter(bank=bank)

    def live(self) -> MemoryQuerySet:
        """Neither archived nor forgotten: what recall sees."""
        return self.filter(archived_at__isnull=True, forgotten_at__isnull=True)


class Memory(BankScoped, EmbeddedText):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    # Indexed by the primary key (bank_id, id) (migration 0033), which also serves lookups by bank alone, and
    # whole-bank jobs (re-embed, near-duplicate scan) that walk a bank in id order a batch at a time.
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="memories", db_index=False)
    memory_id = models.CharField(max_length=255)
    text = models.TextField()
    fact_type = models.CharField(max_length=64, default="world")
    memory_layer = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001  (null = "no layer", as the API says)
    tags = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    occurred_at = models.DateTimeField(null=True, blank=True)
    # Indexed together with the bank (memory_bank_retained): every query that orders by it names a bank.
    retained_at = models.DateTimeField()
    created_at = models.DateTimeField(help_text="when the source says the memory was created")
    updated_at = models.DateTimeField(auto_now=True)
    source = models.CharField(max_length=2048, null=True, blank=True)  # noqa: DJ001  (null = "no source")
    pii = models.BooleanField(default=False)
    content_hash = models.CharField(max_length=64)
    archived_at = models.DateTimeField(null=True, blank=True)
    forgotten_at = models.DateTimeField(null=True, blank=True)
    # When a recall last returned it, to the hour (banks.services.usage); lifecycle archives from here.
    last_recalled_at = models.DateTimeField(null=True, blank=True)
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                    db_constraint=False)
    # The bank's text search configuration when the row was indexed (banks.text_search). A trigger
    # sets it from the bank on insert whatever the writer sends; changing the bank's language
    # re-computes it (banks.services.text_search), and with it the generated search_vector.
    search_config = RegConfigField(db_default=models.Value("memoryhub_english"), editable=False)
    search_vector = models.GeneratedField(
        expression=SearchVector("text", config=F("search_config")),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Copy of the bank's flag (a trigger sets it on insert): the shared HNSW indexes leave these rows out,
    # the bank's own partial index holds them. See banks.vectors.vector_scope.
    own_vector_index = models.BooleanField(default=False, db_default=False)
    # A conversation turn's session, read from its metadata by a trigger whoever inserts it (``session_id``,
    # or the conversation of a ChatGPT / AgentOS import; migration 0025). Null: not part of a conversation.
    session_key = models.CharField(max_length=255, null=True, blank=True, editable=False)  # noqa: DJ001
    # What recall indexes with a turn beside its own text (banks.services.memory_rows.contexts): its speaker, its
    # session's date, the turns before it. Never shown as the memory's text, never exported as it.
    context = models.TextField(null=True, blank=True, editable=False)  # noqa: DJ001
    # The keyword arm's vector of such a turn: to_tsvector(search_config, text + context), set by a trigger.
    context_vector = SearchVectorField(null=True, blank=True, editable=False)

    objects = MemoryQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "memory_id"], name="memory_id_unique_per_bank"),
            # Concurrent retains/imports can never store the same content twice in a bank.
            models.UniqueConstraint(
                fields=["bank", "content_hash"],
                condition=Q(archived_at__isnull=True, forgotten_at__isnull=True),
                name="memory_content_unique_per_bank",
            ),
        ]
        indexes = [
            # A small pending list (kB): new rows wait there, scanned on every search, until merged into
            # the index. At the 4 MB default a busy bank's keyword searches read hundreds of pending pages
            # and the planner gave up on the index (migration 0020).
            GinIndex(fields=["tags"], name="memory_tags_gin", gin_pending_list_limit=GIN_PENDING_LIST_KB),
            # Full text leads with the bank (btree_gin, migration 0026): another tenant's frequent words
            # are skipped through, not walked.
            GinIndex(fields=["bank", "search_vector"], name="memory_bank_search_gin",
                     gin_pending_list_limit=GIN_PENDING_LIST_KB),
            # A conversation turn's text with its context (migration 0028), led by the bank the same way.
            GinIndex(fields=["bank", "context_vector"], name="memory_bank_context_gin",
                     gin_pending_list_limit=GIN_PENDING_LIST_KB, condition=Q(context_vector__isnull=False)),
            # A session's turns in order, for a turn's context and its neighbours' (banks.services.memory_rows.contexts).
            models.Index(fields=["bank", "session_key", "created_at", "id"], name="memory_session_turns",
                         condition=Q(session_key__isnull=False)),
            models.Index(fields=["bank", "-retained_at", "-id"], name="memory_bank_retained"),
            models.Index(fields=["bank", "fact_type"], name="memory_bank_fact_type"),
            # The changes feed reads a bank in (updated_at, id) order.
            models.Index(fields=["bank", "updated_at", "id"], name="memory_bank_changed"),
            # Time travel and the archived list look for what was archived or forgotten, a small part of a bank.
            models.Index(fields=["bank", "archived_at"], name="memory_bank_archived",
                         condition=Q(archived_at__isnull=False)),
            models.Index(fields=["bank", "forgotten_at"], name="memory_bank_forgotten",
                         condition=Q(forgotten_at__isnull=False)),
            # Memories a big import stored before their vector (banks.services.vector_indexes): counted
            # by recall's trace and filled in id order; empty once every vector is in.
            models.Index(fields=["bank", "id"], condition=Q(embedding_dims__isnull=True, forgotten_at__isnull=True),
                         name="memory_pending_vectors"),
        ]

    def __str__(self) -> str:
        return f"{self.bank_id}/{self.memory_id}"

    @property
    def is_live(self) -> bool:
        return self.archived_at is None and self.forgotten_at is None


class Entity(BankScoped, models.Model):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="entities")
    entity_id = models.CharField(max_length=255)
    name = models.CharField(max_length=500)
    entity_type = models.CharField(max_length=64, default="OTHER")
    aliases = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    mention_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    memories = models.ManyToManyField(Memory, through="MemoryEntity", related_name="entities")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bank", "entity_id"], name="entity_id_unique_per_bank")]
        indexes = [models.Index(fields=["bank", "name"], name="entity_bank_name"),
                   # The graph page's list and the bank map: a bank's most mentioned entities first.
                   models.Index(fields=["bank", "-mention_count", "name"], name="entity_bank_mentions")]
        verbose_name_plural = "entities"

    def __str__(self) -> str:
        return f"{self.name} ({self.entity_type})"


class MemoryEntity(BankScoped, models.Model):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    # The memory's bank, repeated so rows can be distributed by bank (docs/scaling.md). Services set it;
    # a database trigger fills it from the memory for any insert that leaves it out (migration 0015).
    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="+", db_index=False)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, db_constraint=False)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, db_constraint=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bank", "memory", "entity"], name="memory_entity_unique")]

    def __str__(self) -> str:
        return f"{self.memory_id} mentions {self.entity_id}"


class EntityLinkQuerySet(models.QuerySet["EntityLink"]):
    def with_entities(self, bank: Bank) -> EntityLinkQuerySet:
        """The bank's links with both entities read in the same statement, each joined entity pinned to
        the bank too: a join on the entity's id alone reads every bank's partition of the entity table
        (docs/scaling.md, "Keys that lead with the bank")."""
        return self.filter(bank=bank, entity_a__bank_id=bank.pk, entity_b__bank_id=bank.pk).select_related(
            "entity_a", "entity_b")


class EntityLink(BankScoped, models.Model):
    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="entity_links")
    entity_a = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="links_out", db_constraint=False)
    entity_b = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="links_in", db_constraint=False)
    link_type = models.CharField(max_length=64)
    evidence = models.TextField(blank=True)
    confidence = models.FloatField(default=1.0)
    metadata = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = EntityLinkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "entity_a", "entity_b", "link_type"], name="entity_link_unique")
        ]

    def __str__(self) -> str:
        return f"{self.entity_a_id} -{self.link_type}-> {self.entity_b_id}"


class MemoryLink(BankScoped, models.Model):
    """A directed relation between two memories of one bank (archive edges, merges)."""

    DATABASE_PRIMARY_KEY: ClassVar[tuple[str, ...]] = BANK_KEY

    bank = models.ForeignKey(Bank, on_delete=models.CASCADE, related_name="memory_links")
    source = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_out", db_constraint=False)
    target = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="links_in", db_constraint=False)
    link_type = models.CharField(max_length=64)
    confidence = models.FloatField(default=1.0)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bank", "source", "target", "link_type"], name="memory_link_unique")
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.link_type}-> {self.target_id}"
