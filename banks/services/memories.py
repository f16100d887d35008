"""Memories: retain (with exact and near-duplicate dedup), edit, archive and restore.

Invariants: a bank never holds two live memories with the same content hash
(database constraint); ``memory_id`` is unique within a bank; every change
writes an audit event; the embedding always matches the current text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from banks.access import Principal, authorize
from banks.content import clean_metadata, content_hash, metadata_size, new_memory_id
from banks.duplicate_rule import same_fact
from banks.models import Bank, Memory
from banks.providers import bank_embedder, get_llm
from banks.providers.embeddings import TextVectors
from banks.selectors.near_duplicates import NEAR_LOOK_LIMIT, nearest_live_memories
from banks.services.audit import audit_record
from banks.services.banks import bank_embedder_pin
from banks.services.entities import attach_entities
from banks.services.locks import lock_bank_for_new_content
from banks.services.memory_rows import (
    ensure_editable,
    mentions_count,
    mentions_take,
    row_insert,
    row_update,
    rows_archive,
    rows_restore,
    turn_context_ahead,
)
from banks.turn_context import embedding_text
from banks.vectors import prepare_graph_walk
from memoryhub.errors import Conflict, InvalidInput, NotFound, violated_constraint
from memoryhub.input_rules import check_storable, check_text, utc_datetime


@dataclass
class RetainOutcome:
    stored: bool
    memory: Memory | None = None
    memory_id: str | None = None
    deduplicated: bool = False
    duplicate_of: str | None = None
    duplicate_text: str | None = None  # the existing memory's text, when the retain was refused
    similarity: float | None = None
    error: str | None = None
    retention_action: str | None = None
    dropped_metadata_keys: tuple[str, ...] = ()


def validate_text(text: Any, field: str = "content") -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("Content is empty", field=field)
    if len(text) > settings.MEMORYHUB_MAX_CONTENT_CHARS:
        raise InvalidInput(f"Content too long: {len(text)} > {settings.MEMORYHUB_MAX_CONTENT_CHARS}", field=field)
    return check_text(text, field)


def validate_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("must be a list of strings", field="tags")
    if len(tags) > settings.MEMORYHUB_MAX_TAGS:
        raise InvalidInput(f"Too many tags ({len(tags)} > {settings.MEMORYHUB_MAX_TAGS})", field="tags")
    cleaned = [check_text(t, "tags").strip() for t in tags if t.strip()]
    if any(len(t) > 255 for t in cleaned):
        raise InvalidInput("a tag is longer than 255 characters", field="tags")
    return list(dict.fromkeys(cleaned))


def validate_time(value: datetime | None, field: str) -> datetime | None:
    return utc_datetime(value, field) if value is not None else None


def validate_label(value: str | None, field: str, max_length: int) -> str | None:
    """Short strings stored as given (ids, fact types, layers, sources)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput("must be a string", field=field)
    if len(value) > max_length:
        raise InvalidInput(f"longer than {max_length} characters", field=field)
    return check_text(value, field)


def validate_metadata(metadata: Any) -> tuple[dict[str, Any], list[str]]:
    if metadata is None:
        return {}, []
    if not isinstance(metadata, dict):
        raise InvalidInput("must be an object", field="metadata")
    check_storable(metadata, "metadata", depth=1)
    cleaned, dropped = clean_metadata(metadata)
    if metadata_size(cleaned) > settings.MEMORYHUB_MAX_METADATA_BYTES:
        raise InvalidInput(f"larger than {settings.MEMORYHUB_MAX_METADATA_BYTES} bytes", field="metadata")
    return cleaned, dropped


AUTHOR_KEY = "_actor"


def stamp_author(metadata: dict[str, Any] | None, author: str | None) -> dict[str, Any]:
    """Who wrote it, as Astrocyte stamps it (metadata ``_actor``): the authenticated caller's principal,
    overwriting whatever the client sent under that key. Without a caller (imports) metadata is kept."""
    metadata = dict(metadata or {})
    if author:
        metadata[AUTHOR_KEY] = author
    return metadata


def memory_retain(
    *,
    bank: Bank,
    text: str,
    actor: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    occurred_at: datetime | None = None,
    created_at: datetime | None = None,
    source: str | None = None,
    fact_type: str | None = None,
    memory_layer: str | None = None,
    memory_id: str | None = None,
    entities: list[dict[str, Any]] | None = None,
    extract_entities: bool = True,
    pii: bool = False,
    near_dedup: bool = True,
    audit: bool = True,
    author: str | None = None,
    by: Principal | None = None,
    vectors: TextVectors | None = None,
) -> RetainOutcome:
    """``author``: the authenticated caller's principal, stamped as metadata ``_actor`` (see stamp_author).

    ``vectors``: the vectors this request already made with the bank's embedder (its text's, when the
    caller looked for duplicates first), so the text is not embedded again.

    ``near_dedup=False`` stores a text however close it is to a memory of the bank (an operator's or
    client's ``allow_duplicate``); the same text twice is still refused (a unique constraint)."""
    authorize(by, bank.bank_id, "write")
    text = validate_text(text)
    tags = validate_tags(tags)
    metadata, dropped = validate_metadata(metadata)
    metadata = stamp_author(metadata, author)
    source = validate_label(source, "source", 2048)
    memory_id = validate_label(memory_id, "memory_id", 255)
    fact_type = validate_label(fact_type, "fact_type", 64)
    memory_layer = validate_label(memory_layer, "memory_layer", 64)
    occurred_at = validate_time(occurred_at, "occurred_at")
    created_at = validate_time(created_at, "created_at")
    digest = content_hash(text)
    embedder = bank_embedder(bank)
    # A first look before any remote call, so a duplicate costs no embedding or entity extraction.
    duplicate = _exact_duplicate(bank, digest)
    if duplicate:
        return duplicate
    now = timezone.now()
    created = created_at or occurred_at or now
    # A conversation turn following stored turns of its session is embedded once, with its context.
    context = turn_context_ahead(bank=bank, text=text, metadata=metadata, created_at=created, occurred_at=occurred_at)
    if vectors is None or vectors.embedder.name != embedder.name:
        vectors = TextVectors(embedder)
    vector = vectors.of(embedding_text(text, context))
    if near_dedup:
        duplicate = _near_duplicate(bank, text, vector, embedder.dimensions, embedder.name)
        if duplicate:
            return duplicate
    if entities is None and extract_entities:
        entities = [{"name": e.name, "entity_type": e.entity_type} for e in get_llm().extract_entities(text)]
    memory = Memory(
        bank=bank, memory_id=memory_id or new_memory_id(), text=text, fact_type=fact_type or "world",
        memory_layer=memory_layer, tags=tags, metadata=metadata, occurred_at=occurred_at, retained_at=now,
        created_at=created, updated_at=now, source=source, pii=pii, content_hash=digest, context=context,
        embedding=vector, embedding_model=embedder.name, embedding_dims=embedder.dimensions,
    )
    try:
        with transaction.atomic():
            row_insert(memory)
            linked: list[int] = []
            if entities:
                _, linked = attach_entities(memory, entities, count=False)
            _note_activity(bank, now)
            bank_embedder_pin(bank, embedder)
            if audit:
                audit_record(actor=actor, action="memory.retain", bank=bank, target_ids=[memory.memory_id],
                             details={"dropped_metadata_keys": dropped} if dropped else None)
            look = (_near_look(bank, text, vector, embedder.dimensions, embedder.name, inserted=memory)
                    if near_dedup else None)
            # The decisive look comes last, under the bank's lock, so the lock is held for one statement
            # and the commit, not for the insert, its index upkeep and the entity links: a retain that
            # committed since the first look is seen now (our own row aside), and none can commit between
            # this look and ours. A duplicate of the same text never gets this far: the unique
            # constraint stops the insert above until the other writer ends, then refuses it.
            lock_bank_for_new_content(bank)
            duplicate = look() if look else None
            if duplicate:
                raise _Superseded(duplicate)
            # Counted last (see banks.services.entities): the rows are held from here to the commit only.
            mentions_count(bank.pk, dict.fromkeys(linked, 1))
    except _Superseded as superseded:
        return superseded.outcome
    except IntegrityError as exc:
        # Another writer stored the same text first (a retain that committed since the first look, or an
        # import, which takes no bank lock).
        constraint = violated_constraint(exc)
        if constraint == "memory_content_unique_per_bank":
            return _exact_duplicate(bank, digest) or RetainOutcome(
                stored=False, deduplicated=True, similarity=1.0, error="Duplicate content",
                retention_action="deduplicated")
        if constraint == "memory_id_unique_per_bank":
            raise Conflict(f"memory_id '{memory_id}' already exists in bank '{bank.bank_id}'",
                           constraint=constraint) from None
        raise
    return RetainOutcome(stored=True, memory=memory, memory_id=memory.memory_id, retention_action="created",
                         dropped_metadata_keys=tuple(dropped))


class _Superseded(Exception):  # noqa: N818  (not an error: the retain became a duplicate; rolls it back)
    def __init__(self, outcome: RetainOutcome) -> None:
        super().__init__(outcome.memory_id)
        self.outcome = outcome


# A bank's last activity is kept to the minute: writing it on every retain made the bank's row a queue.
ACTIVITY_RESOLUTION = timedelta(minutes=1)


def _note_activity(bank: Bank, now: datetime) -> None:
    if bank.last_activity_at is not None and bank.last_activity_at >= now - ACTIVITY_RESOLUTION:
        return  # as loaded for this request: written within the minute, no statement needed
    Bank.objects.filter(pk=bank.pk).filter(
        Q(last_activity_at__isnull=True) | Q(last_activity_at__lt=now - ACTIVITY_RESOLUTION)
    ).update(last_activity_at=now)


def _exact_duplicate(bank: Bank, digest: str) -> RetainOutcome | None:
    # Written out (Memory.objects.live() by hash): every retain asks, before anything else.
    with connection.cursor() as cursor:
        cursor.execute("SELECT memory_id, text FROM banks_memory WHERE bank_id = %s AND content_hash = %s "
                       "AND archived_at IS NULL AND forgotten_at IS NULL ORDER BY id LIMIT 1", [bank.pk, digest])
        row = cursor.fetchone()
    if not row:
        return None
    return RetainOutcome(stored=False, memory_id=row[0], deduplicated=True, duplicate_of=row[0], duplicate_text=row[1],
                         similarity=1.0, error="Duplicate content", retention_action="deduplicated")


def _near_duplicate(bank: Bank, text: str, vector: list[float], dims: int, model: str) -> RetainOutcome | None:
    return _near_outcome(bank, text, nearest_live_memories(bank, vector, dims, model=model))


def _near_look(bank: Bank, text: str, vector: list[float], dims: int, model: str, *,
               inserted: Memory) -> Callable[[], RetainOutcome | None]:
    """The near-duplicate look, made ready in the caller's transaction (graph walk set) so that, once
    the bank's lock is taken, it is a single statement. It searches where ``inserted`` (this retain's
    row) went: the insert trigger copied the bank's index flag onto it under a key-share lock, so a
    bank moving to its own index meanwhile is seen."""
    with connection.cursor() as cursor:
        prepare_graph_walk(connection, cursor, NEAR_LOOK_LIMIT)
    return lambda: _near_outcome(bank, text, nearest_live_memories(
        bank, vector, dims, exclude_pk=inserted.pk, own_index=inserted.own_vector_index, prepared=True,
        model=model))


def _near_outcome(bank: Bank, text: str, nearest: list[tuple[str, float, str]]) -> RetainOutcome | None:
    """The first of the nearest memories that is the same fact: similar enough, and naming the same
    names and numbers (banks.duplicate_rule); another person's look-alike report is not a duplicate."""
    for memory_id, similarity, existing in nearest:
        if similarity < bank.dedup_threshold:
            return None
        if same_fact(text, existing):
            return RetainOutcome(stored=False, memory_id=memory_id, deduplicated=True, duplicate_of=memory_id,
                                 duplicate_text=existing, similarity=round(similarity, 4),
                                 error="All chunks are near-duplicates", retention_action="deduplicated")
    return None


def memory_get(*, bank: Bank, memory_id: str) -> Memory:
    memory = Memory.objects.filter(bank=bank, memory_id=memory_id).first()
    if memory is None:
        raise NotFound(f"Memory '{memory_id}' not found in bank '{bank.bank_id}'")
    return memory


@dataclass(frozen=True)
class NewText:
    """A validated text with its hash and embedding, computed before any transaction opens."""

    text: str
    content_hash: str
    embedding: list[float]
    embedding_model: str
    embedding_dims: int


def prepare_text(*, bank: Bank, text: Any) -> NewText:
    """Validate, hash and embed a replacement text. The embedding may be a remote call: callers do this
    first and hold no lock meanwhile."""
    text = validate_text(text, field="text")
    embedder = bank_embedder(bank)
    return NewText(text=text, content_hash=content_hash(text), embedding=embedder.embed([text])[0],
                   embedding_model=embedder.name, embedding_dims=embedder.dimensions)


def _content_conflict(bank_id: int, digest: str, exclude_pk: int) -> Conflict:
    holder = (Memory.objects.live().filter(bank_id=bank_id, content_hash=digest).exclude(pk=exclude_pk)
              .values_list("memory_id", flat=True).first())
    return Conflict(f"Memory '{holder}' already holds the same content", duplicate_of=holder,
                    constraint="memory_content_unique_per_bank")


def memory_update(
    *,
    memory: Memory,
    actor: str,
    text: str | None = None,
    new_text: NewText | None = None,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    fact_type: str | None = None,
    occurred_at: datetime | None = None,
    created_at: datetime | None = None,
    clear_occurred_at: bool = False,
    reason: str = "",
    reextract: bool = True,
    by: Principal | None = None,
) -> Memory:
    """Edit a memory in place; a new text is re-hashed and re-embedded (or arrives so as ``new_text``),
    and its entities extracted again unless ``reextract`` is False (a merge keeps its sources' entities).

    Raises Conflict when another live memory of the bank holds the new text, also when it was
    stored concurrently (the unique constraint decides), and when the memory is a tombstone.
    """
    authorize(by, memory.bank.bank_id, "write")
    ensure_editable(memory)
    tags_before = list(memory.tags)
    changed: list[str] = []
    if new_text is None and text is not None and text != memory.text:
        new_text = prepare_text(bank=memory.bank, text=text)
    if new_text is not None and new_text.text != memory.text:
        if Memory.objects.live().filter(bank_id=memory.bank_id, content_hash=new_text.content_hash).exclude(
                pk=memory.pk).exists():
            raise _content_conflict(memory.bank_id, new_text.content_hash, memory.pk)
        memory.text, memory.content_hash, memory.embedding = new_text.text, new_text.content_hash, new_text.embedding
        memory.embedding_model, memory.embedding_dims = new_text.embedding_model, new_text.embedding_dims
        changed += ["text", "content_hash", "embedding", "embedding_model", "embedding_dims"]
    if tags is not None:
        tags = validate_tags(tags)
        if tags != memory.tags:
            memory.tags = tags
            changed.append("tags")
    if metadata is not None:
        metadata, _ = validate_metadata(metadata)
        if metadata != memory.metadata:
            memory.metadata = metadata
            changed.append("metadata")
    if fact_type is not None and fact_type != memory.fact_type:
        if not fact_type.strip() or len(fact_type) > 64:
            raise InvalidInput("must be 1-64 characters", field="fact_type")
        check_text(fact_type, "fact_type")
        memory.fact_type = fact_type
        changed.append("fact_type")
    # The dates the memory carries (when it happened, when its source made it); ``retained_at`` is this
    # system's own record of storing it and is never edited. Old and new values go in the audit event.
    dates: dict[str, list[str | None]] = {}
    occurred_at = validate_time(occurred_at, "occurred_at")
    if clear_occurred_at and occurred_at is None and memory.occurred_at is not None:
        dates["occurred_at"] = [memory.occurred_at.isoformat(), None]
        memory.occurred_at = None
        changed.append("occurred_at")
    if occurred_at is not None and occurred_at != memory.occurred_at:
        dates["occurred_at"] = [memory.occurred_at.isoformat() if memory.occurred_at else None, occurred_at.isoformat()]
        memory.occurred_at = occurred_at
        changed.append("occurred_at")
    created_at = validate_time(created_at, "created_at")
    if created_at is not None and created_at != memory.created_at:
        dates["created_at"] = [memory.created_at.isoformat(), created_at.isoformat()]
        memory.created_at = created_at
        changed.append("created_at")
    if not changed:
        return memory
    # A new text names what it names: its entities are extracted again (a remote call, before the
    # transaction) and replace the old mentions, so "Berlin" corrected to "Tokyo" no longer lists Berlin.
    entities = ([{"name": e.name, "entity_type": e.entity_type} for e in get_llm().extract_entities(memory.text)]
                if "text" in changed and reextract else None)
    try:
        with transaction.atomic():
            row_update(memory, changed, tags_before=tags_before)
            if entities is not None:
                _mentions_replace(memory, entities)
            audit_record(actor=actor, action="memory.update", bank=memory.bank, target_ids=[memory.memory_id],
                         reason=reason, details={"fields": [f for f in changed if not f.startswith("embedding")
                                                            and f != "content_hash"], **({"dates": dates} if dates else {})})
            if "text" in changed:
                from banks.services.observations import observations_invalidate_for_memories

                observations_invalidate_for_memories(bank=memory.bank, memory_ids=[memory.memory_id],
                                                     actor=actor, reason="source memory edited")
    except IntegrityError as exc:
        if violated_constraint(exc) == "memory_content_unique_per_bank":
            # Stored by a concurrent retain between the check above and this save.
            raise _content_conflict(memory.bank_id, memory.content_hash, memory.pk) from None
        raise
    return memory


def _mentions_replace(memory: Memory, entities: list[dict[str, Any]]) -> None:
    """The memory's mentions become ``entities``: old ones taken off, new ones linked, counts moved once."""
    deltas = mentions_take(memory.bank_id, [memory.pk])
    _, linked = attach_entities(memory, entities, count=False)
    for pk in linked:
        deltas[pk] = deltas.get(pk, 0) + 1
    mentions_count(memory.bank_id, deltas)


def memories_archive(*, bank: Bank, memory_ids: list[str], actor: str, reason: str = "") -> list[str]:
    """Archive the live ones among ``memory_ids``; returns those archived (one audit event, written by
    the rows' owner)."""
    with transaction.atomic():
        return rows_archive(bank, memory_ids=memory_ids, actor=actor, reason=reason)


def memories_restore(*, bank: Bank, memory_ids: list[str], actor: str, reason: str = "") -> tuple[list[str], list[str]]:
    """Restore archived memories unless a live one already holds the same content (of two archived
    copies of one text, the older comes back). Returns (restored ids, ids left archived because of a
    clash). Three queries and one audit event, whatever the number of ids."""
    restored: list[str] = []
    clashing: list[str] = []
    now = timezone.now()
    try:
        with transaction.atomic():
            # Restoring brings content back to life, as a retain does: same lock, same check.
            lock_bank_for_new_content(bank)
            rows = list(Memory.objects.filter(bank=bank, memory_id__in=memory_ids, archived_at__isnull=False,
                                              forgotten_at__isnull=True)
                        .order_by("pk").values_list("pk", "memory_id", "content_hash"))
            taken = set(Memory.objects.live().filter(bank=bank, content_hash__in={h for _, _, h in rows})
                        .values_list("content_hash", flat=True))
            pks: list[int] = []
            for pk, memory_id, digest in rows:
                if digest in taken:
                    clashing.append(memory_id)
                    continue
                taken.add(digest)
                pks.append(pk)
                restored.append(memory_id)
            if pks:
                # The owner records the restore (one event naming the rows that came back).
                restored = rows_restore(bank, pks, now, actor=actor, reason=reason)
    except IntegrityError as exc:
        if violated_constraint(exc) == "memory_content_unique_per_bank":
            # An import (which takes no bank lock) stored the same content meanwhile.
            raise Conflict("A live memory took the same content while restoring; nothing was restored",
                           constraint="memory_content_unique_per_bank") from None
        raise
    return restored, clashing


def memory_archive(*, memory: Memory, actor: str, reason: str = "") -> Memory:
    memories_archive(bank=memory.bank, memory_ids=[memory.memory_id], actor=actor, reason=reason)
    memory.refresh_from_db()
    return memory


def memory_restore(*, memory: Memory, actor: str, reason: str = "") -> Memory:
    if memory.archived_at is None:
        return memory
    _, clashing = memories_restore(bank=memory.bank, memory_ids=[memory.memory_id], actor=actor, reason=reason)
    if clashing:
        clash = (Memory.objects.live().filter(bank_id=memory.bank_id, content_hash=memory.content_hash)
                 .values_list("memory_id", flat=True).first())
        raise Conflict(f"Cannot restore: memory '{clash}' already holds the same content", duplicate_of=clash)
    memory.refresh_from_db()
    return memory
