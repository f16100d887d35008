"""Bulk actions on many memories: preview how many a selection touches, then apply.

The selection is either explicit ids or "everything matching these filters"; it is
applied in chunks so a million-row selection never sits in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from banks.content import content_hash
from banks.models import Bank, Memory
from banks.services.audit import audit_record
from banks.services.forget import memory_forget
from banks.services.memories import memories_archive, memories_restore
from banks.services.observations import observations_invalidate_for_memories
from memoryhub.errors import InvalidInput

ACTIONS = ("tag", "untag", "archive", "restore", "forget", "move")
CHUNK = 1000


@dataclass
class BulkOutcome:
    action: str
    touched: int
    skipped: int = 0


def _chunks(rows: QuerySet[Memory]):  # noqa: ANN202
    last = 0
    while True:
        ids = list(rows.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:CHUNK])
        if not ids:
            return
        yield ids
        last = ids[-1]


def bulk_apply(*, bank: Bank, rows: QuerySet[Memory], action: str, actor: str, tag: str = "", reason: str = "",
               compliance: bool = False, target: Bank | None = None) -> BulkOutcome:
    if action not in ACTIONS:
        raise InvalidInput(f"must be one of {', '.join(ACTIONS)}", field="action")
    if action in {"tag", "untag"} and not tag.strip():
        raise InvalidInput("a tag is needed", field="tag")
    if action == "move" and (target is None or target.pk == bank.pk):
        raise InvalidInput("choose another bank to move to", field="target")
    rows = rows.filter(bank=bank)
    outcome = BulkOutcome(action=action, touched=0)
    tag = tag.strip()
    for ids in _chunks(rows):
        with transaction.atomic():
            chunk = Memory.objects.filter(pk__in=ids)
            memory_ids = list(chunk.values_list("memory_id", flat=True))
            if action == "tag":
                for memory in chunk.exclude(tags__contains=[tag]).only("pk", "tags"):
                    Memory.objects.filter(pk=memory.pk).update(tags=[*memory.tags, tag], updated_at=timezone.now())
                    outcome.touched += 1
            elif action == "untag":
                for memory in chunk.filter(tags__contains=[tag]).only("pk", "tags"):
                    Memory.objects.filter(pk=memory.pk).update(tags=[t for t in memory.tags if t != tag],
                                                               updated_at=timezone.now())
                    outcome.touched += 1
            elif action == "archive":
                outcome.touched += len(memories_archive(bank=bank, memory_ids=memory_ids, actor=actor,
                                                        reason=reason, action="memory.bulk_archive"))
                continue  # memories_archive writes its own audit event
            elif action == "restore":
                restored, clashing = memories_restore(bank=bank, memory_ids=memory_ids, actor=actor, reason=reason)
                outcome.touched += len(restored)
                outcome.skipped += len(clashing)
                continue
            elif action == "forget":
                result = memory_forget(bank=bank, actor=actor, memory_ids=memory_ids, reason=reason,
                                       compliance=compliance)
                outcome.touched += result.deleted_count
                continue  # memory_forget writes its own audit event
            elif action == "move":
                outcome_moved, skipped = _move(bank, target, chunk)  # type: ignore[arg-type]
                outcome.touched += outcome_moved
                outcome.skipped += skipped
                if outcome_moved:
                    observations_invalidate_for_memories(bank=bank, memory_ids=memory_ids, actor=actor,
                                                         reason="source memories moved to another bank")
            audit_record(actor=actor, action=f"memory.bulk_{action}", bank=bank, target_ids=memory_ids,
                         reason=reason, details={"tag": tag, "target": target.bank_id if target else None})
    return outcome


def _move(bank: Bank, target: Bank, chunk: QuerySet[Memory]) -> tuple[int, int]:
    moved = skipped = 0
    for memory in chunk.only("pk", "memory_id", "text"):
        clash = Memory.objects.filter(bank=target, memory_id=memory.memory_id).exists() or (
            Memory.objects.live().filter(bank=target, content_hash=content_hash(memory.text)).exists())
        if clash:
            skipped += 1
            continue
        Memory.objects.filter(pk=memory.pk).update(bank=target, updated_at=timezone.now())
        memory.entities.clear()
        moved += 1
    return moved, skipped
