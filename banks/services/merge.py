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

from banks.access import Principal, authorize
from banks.models import Bank, DuplicatePair, Memory, MemoryEntity, MemoryLink, ObservationEvidence
from banks.services.audit import audit_record
from banks.services.entities import link_memory_entities
from banks.services.memory_edit import memory_update, prepare_text
from banks.services.memory_rows import row_update, rows_merge_into, rows_not_duplicates_note
from memoryhub.errors import InvalidInput, NotFound


def memory_merge(*, bank: Bank, memory_ids: list[str], actor: str, text: str | None = None,
                 reason: str = "", by: Principal | None = None) -> Memory:
    """Raises NotFound when any of the memories is missing or no longer live, also when a concurrent
    merge or archive took one of them first."""
    authorize(by, bank.bank_id, "write")
    ids = list(dict.fromkeys(memory_ids or []))
    if len(ids) < 2:
        raise InvalidInput("give at least two memory ids to merge", field="memory_ids")
    _live_rows(bank, ids)  # fail fast, before an embedding is computed for nothing
    # The embedding may be a remote call: compute it before any row is locked.
    new_text = prepare_text(bank=bank, text=text) if text is not None and text.strip() else None
    now = timezone.now()
    with transaction.atomic():
        # Lock the rows (in primary-key order, so overlapping merges cannot deadlock) and look again:
        # a merge that committed meanwhile has archived one of them, and this one must fail.
        rows = _live_rows(bank, ids, lock=True)
        survivor, others = rows[ids[0]], [rows[i] for i in ids[1:]]
        other_pks = [o.pk for o in others]
        tags = list(dict.fromkeys([*survivor.tags, *(t for o in others for t in o.tags)]))
        metadata: dict[str, Any] = {}
        for other in reversed(others):
            metadata.update(other.metadata or {})
        metadata.update(survivor.metadata or {})
        metadata["merged_from"] = list(dict.fromkeys([*(survivor.metadata or {}).get("merged_from", []),
                                                      *(o.memory_id for o in others)]))
        # The owner archives them as merged into the survivor and records the merge (one event).
        rows_merge_into(bank, survivor, other_pks, actor=actor, reason=reason, now=now)
        MemoryLink.objects.bulk_create(
            [MemoryLink(bank=bank, source=o, target=survivor, link_type="merged_into", metadata={"text": o.text})
             for o in others], ignore_conflicts=True)
        link_memory_entities(survivor, list(
            MemoryEntity.objects.filter(bank=bank, memory_id__in=other_pks).values_list("entity_id", flat=True).distinct()))
        ObservationEvidence.objects.bulk_create(
            [ObservationEvidence(bank=bank, observation_id=e.observation_id, memory_ref=survivor.memory_id,
                                 memory=survivor,
                                 evidence_at=e.evidence_at)
             for e in ObservationEvidence.objects.filter(bank=bank, memory_ref__in=[o.memory_id for o in others])],
            ignore_conflicts=True)
        tags_before = list(survivor.tags)
        survivor.tags, survivor.metadata = tags, metadata
        row_update(survivor, ["tags", "metadata"], tags_before=tags_before)
        survivor.refresh_from_db()
        if new_text is not None and new_text.text != survivor.text:
            # The survivor mentions what its sources mentioned (linked above): the merged text is not
            # extracted again (no remote call while the rows are locked).
            survivor = memory_update(memory=survivor, actor=actor, new_text=new_text, reason="merged text",
                                     reextract=False)
    return survivor


def _live_rows(bank: Bank, ids: list[str], *, lock: bool = False) -> dict[str, Memory]:
    rows = Memory.objects.filter(bank=bank, memory_id__in=ids).order_by("pk")
    if lock:
        rows = rows.select_for_update()
    found = {m.memory_id: m for m in rows if m.is_live}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"memories not found (or not live) in bank '{bank.bank_id}': {', '.join(missing)}")
    return found


def duplicates_dismiss(*, bank: Bank, memory_ids: list[str], actor: str, by: Principal | None = None) -> int:
    """Mark memories as "not duplicates of each other" so review stops proposing them."""
    authorize(by, bank.bank_id, "write")
    ids = list(dict.fromkeys(memory_ids or []))
    if len(ids) < 2:
        raise InvalidInput("give at least two memory ids", field="memory_ids")
    pks = list(Memory.objects.filter(bank=bank, memory_id__in=ids).values_list("pk", flat=True))
    with transaction.atomic():
        rows_not_duplicates_note(bank.pk, pks, ids)
        # The stored pairs among them go too (the scan skips dismissed pairs from now on).
        DuplicatePair.objects.filter(bank=bank, memory_a_id__in=pks, memory_b_id__in=pks).delete()
        audit_record(actor=actor, action="memory.not_duplicates", bank=bank, target_ids=ids)
    return len(pks)
