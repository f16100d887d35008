"""Bulk actions on many memories: preview how many a selection touches, then apply.

The selection is either explicit ids or "everything matching these filters"; it is
applied in chunks so a million-row selection never sits in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet

from banks.access import Principal, authorize, bulk_permission
from banks.models import Bank, Memory
from banks.providers import Embedder, bank_embedder
from banks.services.banks import bank_embedder_pin
from banks.services.forget import memory_forget
from banks.services.memories import validate_tags
from banks.services.memory_archiving import memories_archive, memories_restore
from banks.services.memory_rows import rows_move, rows_tag, rows_untag
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
               compliance: bool = False, target: Bank | None = None,
               progress: Callable[[int], None] | None = None, by: Principal | None = None) -> BulkOutcome:
    """Apply ``action`` to the selection, a chunk per transaction, each chunk's rows changed in one
    statement (banks.services.memory_rows, which records it in one audit event). ``progress`` hears the
    number of rows looked at after each chunk (a job's progress; it may raise to stop)."""
    if action not in ACTIONS:
        raise InvalidInput(f"must be one of {', '.join(ACTIONS)}", field="action")
    # A compliance erase needs admin whoever asks and whichever form it came from (banks.access).
    authorize(by, bank.bank_id, bulk_permission(action, compliance=compliance))
    if action == "move" and target is not None:
        authorize(by, target.bank_id, "write")
    if action in {"tag", "untag"} and not tag.strip():
        raise InvalidInput("a tag is needed", field="tag")
    if action == "move" and (target is None or target.pk == bank.pk):
        raise InvalidInput("choose another bank to move to", field="target")
    rows = rows.filter(bank=bank)
    outcome = BulkOutcome(action=action, touched=0)
    tag = tag.strip()
    if action in {"tag", "untag"}:
        validate_tags([tag])
    embedder = bank_embedder(target) if target is not None else None
    seen = 0
    for ids in _chunks(rows):
        seen += len(ids)
        if action == "move":
            _move_chunk(bank, target, embedder, ids, outcome, actor=actor, reason=reason)  # type: ignore[arg-type]
        else:
            _apply_chunk(bank, action, ids, outcome, actor=actor, tag=tag, reason=reason, compliance=compliance)
        if progress is not None:
            progress(seen)
    if action == "move" and outcome.touched and embedder is not None:
        bank_embedder_pin(target, embedder)  # type: ignore[arg-type]
    return outcome


def _apply_chunk(bank: Bank, action: str, ids: list[int], outcome: BulkOutcome, *, actor: str, tag: str,
                 reason: str, compliance: bool) -> None:
    with transaction.atomic():
        if action == "archive":
            outcome.touched += len(memories_archive(bank=bank, memory_ids=_ids(bank, ids), actor=actor,
                                                    reason=reason))
        elif action == "restore":
            restored, clashing = memories_restore(bank=bank, memory_ids=_ids(bank, ids), actor=actor, reason=reason)
            outcome.touched += len(restored)
            outcome.skipped += len(clashing)
        elif action == "forget":
            # Authorized once for the whole selection, in bulk_apply.
            result = memory_forget(bank=bank, actor=actor, memory_ids=_ids(bank, ids), reason=reason, compliance=compliance)
            outcome.touched += result.deleted_count
        else:
            outcome.touched += len((rows_tag if action == "tag" else rows_untag)(bank, ids, tag, actor=actor,
                                                                                 reason=reason))


def _ids(bank: Bank, pks: list[int]) -> list[str]:
    return list(Memory.objects.filter(bank=bank, pk__in=pks).order_by("pk").values_list("memory_id", flat=True))


def _move_chunk(bank: Bank, target: Bank, embedder: Embedder, ids: list[int], outcome: BulkOutcome, *,
                actor: str, reason: str) -> None:
    # Rows embedded with another model than the target's get the target's vector, computed before the
    # transaction opens (it may be a remote call).
    stale = list(Memory.objects.filter(bank=bank, pk__in=ids, forgotten_at__isnull=True).exclude(
        embedding_model=embedder.name).values_list("pk", "text"))
    vectors = dict(zip([pk for pk, _ in stale], embedder.embed([text for _, text in stale]), strict=True)) if stale else {}
    with transaction.atomic():
        moved, skipped = rows_move(bank, target, ids, model=embedder.name, dims=embedder.dimensions, vectors=vectors,
                                   actor=actor, reason=reason)
        outcome.touched += len(moved)
        outcome.skipped += skipped
        if moved:
            observations_invalidate_for_memories(bank=bank, memory_ids=moved, actor=actor,
                                                 reason="source memories moved to another bank")
