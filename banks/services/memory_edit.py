"""Editing a memory in place: a new text re-hashed, re-embedded (before any transaction) and its entities
extracted again; tags, metadata, type and dates; one ``memory.update`` audit event per edit.

A tombstone is never edited (409), and no edit gives a live memory the text another live one holds
(the unique constraint decides, also against a concurrent writer)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from banks.access import Principal, authorize
from banks.content import content_hash
from banks.models import Bank, Memory
from banks.providers import bank_embedder, get_llm
from banks.services.audit import audit_record
from banks.services.entities import attach_entities
from banks.services.memories import validate_metadata, validate_tags, validate_text, validate_time
from banks.services.memory_rows import ensure_editable, mentions_count, mentions_take, row_update
from memoryhub.errors import Conflict, InvalidInput, NotFound, violated_constraint
from memoryhub.input_rules import check_text


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
