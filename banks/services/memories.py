"""Memories: retain (with exact and near-duplicate dedup), and the input rules of a memory's fields.

Invariants: a bank never holds two live memories with the same content hash
(database constraint); ``memory_id`` is unique within a bank; every change
writes an audit event; the embedding always matches the current text. Edits are
banks.services.memory_edit, archive and restore banks.services.memory_archiving.
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
from banks.models import Bank, Memory
from banks.providers import bank_embedder, extraction_is_remote, get_llm
from banks.providers.embeddings import TextVectors
from banks.selectors.near_duplicates import NEAR_CANDIDATES, NEAR_LOOK_BREADTH, near_duplicate_of
from banks.services.audit import audit_record
from banks.services.banks import bank_embedder_pin
from banks.services.entities import attach_entities
from banks.services.locks import lock_bank_for_new_content
from banks.services.memory_rows import (
    mentions_count,
    row_insert,
    turn_context_ahead,
)
from banks.turn_context import embedding_text
from banks.vectors import prepare_graph_walk
from memoryhub.errors import Conflict, InvalidInput, violated_constraint
from memoryhub.input_rules import check_storable, check_text, utc_datetime
from memoryhub.postgres.prepared import execute_prepared


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
    llm = get_llm() if entities is None and extract_entities else None
    # The look under the bank's lock (below) is the one that decides. This first one, before the
    # transaction, spares a near-duplicate its entity extraction when that is a remote chat-model call
    # (and the insert into the bank's graph that is rolled back, a dead entry until vacuum). With the
    # extraction local (the default ``extractive``) or none, it would only repeat the second look for
    # every retain, so it is skipped: a near-duplicate then costs the rolled-back insert instead
    # (docs/benchmarks.md, "Load": a retain's statements).
    early_look = near_dedup and llm is not None and extraction_is_remote(llm)
    if early_look:
        duplicate = _near_duplicate(bank, text, vector, embedder.dimensions, embedder.name)
        if duplicate:
            return duplicate
    if llm is not None:
        entities = [{"name": e.name, "entity_type": e.entity_type} for e in llm.extract_entities(text)]
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
            # A near-duplicate is answered as one whatever id it asked for, as when the first look ran.
            duplicate = (None if early_look or not near_dedup else
                         _near_duplicate(bank, text, vector, embedder.dimensions, embedder.name))
            if duplicate:
                return duplicate
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
        execute_prepared(cursor, "SELECT memory_id, text FROM banks_memory WHERE bank_id = %s AND content_hash = %s "
                         "AND archived_at IS NULL AND forgotten_at IS NULL ORDER BY id LIMIT 1", [bank.pk, digest])
        row = cursor.fetchone()
    if not row:
        return None
    return RetainOutcome(stored=False, memory_id=row[0], deduplicated=True, duplicate_of=row[0], duplicate_text=row[1],
                         similarity=1.0, error="Duplicate content", retention_action="deduplicated")


def _near_duplicate(bank: Bank, text: str, vector: list[float], dims: int, model: str) -> RetainOutcome | None:
    return _near_outcome(near_duplicate_of(bank, text, vector, dims, threshold=bank.dedup_threshold, model=model))


def _near_look(bank: Bank, text: str, vector: list[float], dims: int, model: str, *,
               inserted: Memory) -> Callable[[], RetainOutcome | None]:
    """The near-duplicate look, made ready in the caller's transaction (graph walk set) so that, once
    the bank's lock is taken, it is a single statement. It searches where ``inserted`` (this retain's
    row) went: the insert trigger copied the bank's index flag onto it under a key-share lock, so a
    bank moving to its own index meanwhile is seen."""
    with connection.cursor() as cursor:
        prepare_graph_walk(connection, cursor, NEAR_CANDIDATES, ef=NEAR_LOOK_BREADTH)
    return lambda: _near_outcome(near_duplicate_of(
        bank, text, vector, dims, threshold=bank.dedup_threshold, exclude_pk=inserted.pk,
        own_index=inserted.own_vector_index, prepared=True, model=model))


def _near_outcome(duplicate: tuple[str, float, str] | None) -> RetainOutcome | None:
    """A retain's answer for the memory it would repeat (banks.selectors.near_duplicates.near_duplicate_of)."""
    if duplicate is None:
        return None
    memory_id, similarity, existing = duplicate
    return RetainOutcome(stored=False, memory_id=memory_id, deduplicated=True, duplicate_of=memory_id,
                         duplicate_text=existing, similarity=round(similarity, 4),
                         error="All chunks are near-duplicates", retention_action="deduplicated")
