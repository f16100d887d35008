"""The internal record every archive format converts to and from.

Readers yield ``MemoryRecord`` (a memory to store) or ``RecordError`` (a line or
item that could not be read, with its position and reason). Writers take
``MemoryRecord``. Nothing here touches the database or the filesystem.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoryhub.input_rules import UnstorableInput, check_storable, utc_datetime
from portability.vector_text import VectorText


@dataclass
class EntityRecord:
    name: str
    entity_type: str = "OTHER"
    aliases: list[str] = field(default_factory=list)


@dataclass
class LinkRecord:
    """A directed relation from this record to another record of the same archive.

    ``target_id`` is the other record's ``memory_id`` in the archive; ``link_type``
    keeps the source format's edge name (``similar_to``, ``derives_from``, ...).
    """

    target_id: str
    link_type: str
    confidence: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class EntityLinkRecord:
    """A relation between two entities (a knowledge-graph edge), created with both ends if they are missing."""

    source: EntityRecord
    target: EntityRecord
    link_type: str
    confidence: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class MemoryRecord:
    text: str
    memory_id: str | None = None
    fact_type: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None
    created_at: datetime | None = None
    retained_at: datetime | None = None
    source: str | None = None
    memory_layer: str | None = None
    entities: list[EntityRecord] = field(default_factory=list)
    # Floats, or (read from an AMA line) the array's text, parsed only if asked.
    embedding: list[float] | VectorText | None = None
    embedding_model: str | None = None
    links: list[LinkRecord] = field(default_factory=list)
    entity_links: list[EntityLinkRecord] = field(default_factory=list)
    # Deleted in the source: stored, then forgotten at once (kept as a tombstone, never recalled).
    forgotten: bool = False
    # Position in the source (line number for line formats, item index or file path otherwise).
    position: str | int | None = None


@dataclass
class RecordError:
    position: str | int
    reason: str


@dataclass
class RecordSkipped(RecordError):
    """An item the source asks not to import (a ChatGPT conversation marked do-not-remember): reported
    and counted as skipped, never as an error."""


@dataclass
class ArchiveHeader:
    """What a format says about the whole archive (AMA header, amplihack top level...)."""

    format: str
    bank_id: str | None = None
    exported_at: str | None = None
    provider: str | None = None
    memory_count: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def record_problem(record: MemoryRecord) -> str | None:
    """Why ``record`` cannot be stored (NUL, lone surrogate, a time no reader can show), or None.

    Times are normalised to UTC in place, so every format is held to the API's rule.
    """
    try:
        check_storable({"id": record.memory_id, "text": record.text, "fact_type": record.fact_type,
                        "tags": record.tags, "metadata": record.metadata, "source": record.source,
                        "memory_layer": record.memory_layer,
                        "entities": [[e.name, e.entity_type, e.aliases] for e in record.entities],
                        "links": [[link.target_id, link.link_type] for link in record.links]})
        for name in ("occurred_at", "created_at", "retained_at"):
            value = getattr(record, name)
            if value is not None:
                setattr(record, name, utc_datetime(value, name))
    except UnstorableInput as exc:
        return str(exc)
    # A vector kept as its text was checked by its grammar as it was read (portability.vector_text).
    if record.embedding is not None and not isinstance(record.embedding, VectorText) \
            and not storable_vector(record.embedding):
        return "field 'embedding' must hold finite numbers within single precision (±3.4e38)"
    return None


# pgvector keeps single-precision floats: a value past this stops the whole batch's COPY.
FLOAT4_MAX = 3.4028234663852886e38


def storable_vector(values: list[float]) -> bool:
    """Every value finite and within float4 (a NaN or an infinity makes the sum non-finite; a sum of
    in-range values cannot overflow a double). Three passes in C: an import checks millions."""
    return math.isfinite(sum(values)) and max(values) <= FLOAT4_MAX and min(values) >= -FLOAT4_MAX
