"""Merge memories into one, keeping where everything came from.

The first id survives (optionally with new text). Tags are unioned and metadata
merged (the survivor's keys win) with ``merged_from`` listing the others. The
others are archived — out of recall, kept for audit — each with a pointer
(``merged_into`` and a ``merged_into`` link) to the survivor. Their entity
mentions and observation evidence move to the survivor.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from banks.models import Bank, Memory, MemoryEntity, MemoryLink, ObservationEvidence
from banks.services.audit import audit_record
from banks.services.memories import memory_update
from memoryhub.errors import InvalidInput, NotFound


def memory_merge(*, bank: Bank, memory_ids: list[str], actor: str, text: str | None = None,
                 reason: str = "") -> Memory:
    ids = list(dict.fromkeys(memory_ids or []))
    if len(ids) < 2:
        raise InvalidInput("give at least two memory ids to merge", field="memory_ids")
    rows = {m.memory_id: m for m in Memory.objects.live().filter(bank=bank, memory_id__in=ids)}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise NotFound(f"memories not found (or not live) in bank '{bank.bank_id}': {', '.join(missing)}")
    survivor, others = rows[ids[0]], [rows[i] for i in ids[1:]]
    now = timezone.now()
    with transaction.atomic():
        tags = list(dict.fromkeys([*survivor.tags, *(t for o in others for t in o.tags)]))
        metadata: dict[str, Any] = {}
        for other in reversed(others):
            metadata.update(other.metadata or {})
        metadata.update(survivor.metadata or {})
        metadata["merged_from"] = list(dict.fromkeys([*(survivor.metadata or {}).get("merged_from", []),
                                                      *(o.memory_id for o in others)]))
        for other in others:
            Memory.objects.filter(pk=other.pk).update(archived_at=now, merged_into=survivor, updated_at=now)
            MemoryLink.objects.get_or_create(bank=bank, source=other, target=survivor, link_type="merged_into",
                                             defaults={"metadata": {"text": other.text}})
            for link in MemoryEntity.objects.filter(memory=other):
                MemoryEntity.objects.get_or_create(memory=survivor, entity_id=link.entity_id)
            for evidence in ObservationEvidence.objects.filter(memory_ref=other.memory_id,
                                                               observation__bank=bank):
                ObservationEvidence.objects.get_or_create(
                    observation_id=evidence.observation_id, memory_ref=survivor.memory_id,
                    defaults={"memory": survivor, "evidence_at": evidence.evidence_at})
        Memory.objects.filter(pk=survivor.pk).update(tags=tags, metadata=metadata, updated_at=now)
        survivor.refresh_from_db()
        if text is not None and text.strip() and text != survivor.text:
            survivor = memory_update(memory=survivor, actor=actor, text=text, reason="merged text")
        audit_record(actor=actor, action="memory.merge", bank=bank, target_ids=ids, reason=reason,
                     details={"survivor": survivor.memory_id, "merged": [o.memory_id for o in others]})
    return survivor


def duplicates_dismiss(*, bank: Bank, memory_ids: list[str], actor: str) -> int:
    """Mark memories as "not duplicates of each other" so review stops proposing them."""
    ids = list(dict.fromkeys(memory_ids or []))
    if len(ids) < 2:
        raise InvalidInput("give at least two memory ids", field="memory_ids")
    rows = list(Memory.objects.filter(bank=bank, memory_id__in=ids))
    with transaction.atomic():
        for memory in rows:
            metadata = dict(memory.metadata or {})
            metadata["_not_duplicate_of"] = sorted(set(metadata.get("_not_duplicate_of", [])) |
                                                   (set(ids) - {memory.memory_id}))
            Memory.objects.filter(pk=memory.pk).update(metadata=metadata)
        audit_record(actor=actor, action="memory.not_duplicates", bank=bank, target_ids=ids)
    return len(rows)
