"""Forget: by ids, tags, whole bank or date; archive, delete, or erase for compliance.

* archive: ``archived_at`` is set; invisible to recall, restorable.
* delete (default): ``forgotten_at`` is set; the row stays as a tombstone so
  history ``as_of`` an earlier moment still sees it (Astrocyte's SQL stores do
  the same), but nothing else does.
* compliance: the rows are removed for good; only the audit event remains,
  and it holds no text of what was deleted. It overrides legal holds and names them. A big
  erasure runs in chunks, one transaction and one audit event each.
* erase (``memory_ids`` only): text, embedding, metadata and entity links are purged and the row
  stays as a tombstone, so a client following the changes feed learns of it.
* A bank under legal hold refuses delete and erase (423 Locked); archive stays allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from banks.access import Principal, authorize, forget_permission
from banks.models import Bank, Memory
from banks.selectors.holds import active_hold_ids
from banks.services.audit import MAX_TARGET_IDS, audit_record
from banks.services.holds import ensure_not_held
from banks.services.memory_rows import rows_archive, rows_delete, rows_erase, rows_forget
from banks.services.observations import observations_invalidate_for_memories
from memoryhub.errors import InvalidInput

# Rows erased per transaction by a compliance forget (as bank deletion does).
ERASE_CHUNK = 5000


@dataclass
class ForgetOutcome:
    deleted_count: int = 0
    archived_count: int = 0
    memory_ids: list[str] = field(default_factory=list)
    # Rows whose text and vectors were purged (an erase or a compliance forget); None for the others.
    erased_count: int | None = None


def forget_selection(
    *, bank: Bank, memory_ids: list[str] | None = None, tags: list[str] | None = None,
    scope: str | None = None, before_date: datetime | None = None,
) -> QuerySet[Memory]:
    """The memories a forget call names; criteria given together must all hold."""
    if scope is not None and scope != "all":
        raise InvalidInput("must be 'all' or omitted", field="scope")
    if not memory_ids and not tags and scope is None and before_date is None:
        raise InvalidInput("one of memory_ids, tags, scope='all' or before_date is required")
    selection = Memory.objects.filter(bank=bank)
    if memory_ids:
        selection = selection.filter(memory_id__in=memory_ids)
    if tags:
        selection = selection.filter(tags__overlap=tags)
    if before_date is not None:
        selection = selection.annotate(_when=Coalesce("occurred_at", "created_at")).filter(_when__lt=before_date)
    return selection


def memory_forget(
    *,
    bank: Bank,
    actor: str,
    memory_ids: list[str] | None = None,
    tags: list[str] | None = None,
    scope: str | None = None,
    before_date: datetime | None = None,
    archive: bool = False,
    compliance: bool = False,
    erase: bool = False,
    reason: str = "",
    by: Principal | None = None,
) -> ForgetOutcome:
    """``by``: the caller, whose permission is checked here for every surface (see banks.access)."""
    authorize(by, bank.bank_id, forget_permission(scope=scope, compliance=compliance, erase=erase))
    if compliance and not (reason or "").strip():
        raise InvalidInput("a compliance forget must give a reason", field="reason")
    if compliance and archive:
        raise InvalidInput("a compliance forget erases for good; it cannot archive", field="archive")
    if erase and (archive or not memory_ids):
        raise InvalidInput("erase purges named memories: give memory_ids, without archive", field="erase")
    selection = forget_selection(bank=bank, memory_ids=memory_ids, tags=tags, scope=scope, before_date=before_date)
    # A hold blocks deleting, not archiving (nothing is lost); a compliance erase overrides it.
    overridden_holds = active_hold_ids(bank) if compliance else []
    if erase and not compliance:
        ensure_not_held(bank)
    if not compliance and not archive:
        ensure_not_held(bank)
    criteria = {
        "memory_ids": (memory_ids or [])[:100], "tags": tags or [], "scope": scope,
        "before_date": before_date.isoformat() if before_date else None,
    }
    if compliance:
        return _erase(bank=bank, selection=selection, actor=actor, reason=reason, criteria=criteria,
                      overridden_holds=overridden_holds)
    now = timezone.now()
    outcome = ForgetOutcome()
    # The rows' owner records what it changed, with the criteria asked for.
    asked: dict[str, Any] = {"criteria": criteria}
    with transaction.atomic():
        if erase and not compliance:
            # Purge text, embedding and everything derived, keeping a tombstone for the changes feed.
            ids = list(selection.values_list("memory_id", flat=True))
            ids = rows_erase(bank, ids, now, actor=actor, reason=reason, details=asked)
            outcome.deleted_count = outcome.erased_count = len(ids)
        elif archive:
            ids = rows_archive(bank, pks=list(selection.filter(archived_at__isnull=True, forgotten_at__isnull=True)
                                              .values_list("pk", flat=True)), now=now, actor=actor,
                               reason=reason, details=asked)
            outcome.archived_count = len(ids)
        else:
            visible = selection.filter(forgotten_at__isnull=True)
            ids = rows_forget(bank, pks=list(visible.values_list("pk", flat=True)), now=now, actor=actor,
                               reason=reason, details=asked)
            outcome.deleted_count = len(ids)
        outcome.memory_ids = ids
        if not ids:
            # Nothing changed, so the owner wrote nothing: the request is still recorded.
            audit_record(actor=actor, bank=bank, reason=reason, compliance=erase, details=asked,
                         action="memory.erase" if erase else ("memory.archive" if archive else "memory.forget"))
        if ids and not archive:
            observations_invalidate_for_memories(bank=bank, memory_ids=ids, actor=actor,
                                                 reason="source memories forgotten")
    return outcome


def _erase(*, bank: Bank, selection: QuerySet[Memory], actor: str, reason: str,
           criteria: dict[str, Any], overridden_holds: list[Any]) -> ForgetOutcome:
    """Remove every matching row (archived and tombstoned ones too), ERASE_CHUNK rows per transaction,
    so erasing a whole big bank never holds all its ids in memory or one huge transaction open. Each
    chunk writes its own audit event: whatever stops the erasure half-way, what was erased is recorded."""
    outcome = ForgetOutcome(erased_count=0)
    holds = {"overrode_holds": overridden_holds} if overridden_holds else {}
    last_pk = 0
    chunk_number = 0
    while True:
        with transaction.atomic():
            rows = list(selection.filter(pk__gt=last_pk).order_by("pk").values_list("pk", "memory_id")[:ERASE_CHUNK])
            if not rows:
                break
            last_pk = rows[-1][0]
            ids = [memory_id for _, memory_id in rows]
            chunk_number += 1
            # The owner records the chunk's erasure (one compliance event naming its rows).
            rows_delete(bank, [pk for pk, _ in rows], actor=actor, reason=reason,
                        details={"criteria": criteria, "chunk": chunk_number, **holds})
            outcome.deleted_count += len(ids)
            outcome.erased_count = outcome.deleted_count
            observations_invalidate_for_memories(bank=bank, memory_ids=ids, actor=actor,
                                                 reason="source memories forgotten")
        if len(outcome.memory_ids) < MAX_TARGET_IDS:
            outcome.memory_ids.extend(ids[:MAX_TARGET_IDS - len(outcome.memory_ids)])
        if len(rows) < ERASE_CHUNK:
            break
    if not chunk_number:
        # Nothing matched: the request is still recorded.
        audit_record(actor=actor, action="memory.erase", bank=bank, reason=reason, compliance=True,
                     details={"criteria": criteria, **holds})
    return outcome


__all__ = ["ForgetOutcome", "forget_selection", "memory_forget"]
