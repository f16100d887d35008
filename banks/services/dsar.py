"""Data-subject erasure across a tenant's banks (Astrocyte's /v1/dsar/forget_principal).

A tenant is the set of banks whose id starts with ``<tenant_id>:`` (Astrocyte's convention). In each,
the memories the principal wrote (metadata ``_actor``, stamped from the authenticated caller on retain,
sync push and the agent tools, as Astrocyte 0.22's ``forget_principal`` matches them) or tagged
``principal:<principal>`` (the older convention) are erased for compliance through ``memory_forget``:
text, embedding and derived rows purged, a tombstone kept, legal holds overridden and recorded. A
bank that fails is reported with ``error`` and the others still go ahead, as Astrocyte reports them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, QuerySet

from banks.access import Principal, authorize, forget_permission
from banks.models import Bank, Memory
from banks.services.forget import memory_forget
from banks.services.memories import AUTHOR_KEY
from memoryhub.errors import InvalidInput, MemoryHubError

logger = logging.getLogger(__name__)
TAG_PREFIX = "principal:"


@dataclass
class DsarOutcome:
    tenant_id: str
    principal: str
    tag_convention: str
    banks_processed: int = 0
    memories_deleted: int = 0
    # Astrocyte 0.22 forgets, then erases: its answer counts both. Ours is one step, so both agree.
    memories_erased: int = 0
    details: list[dict[str, Any]] = field(default_factory=list)


def tenant_banks(tenant_id: str) -> QuerySet[Bank]:
    """The tenant's banks, by id. The tenant id may not itself contain ':' (it would name a sub-tenant)."""
    if not isinstance(tenant_id, str) or not tenant_id.strip():
        raise InvalidInput("String should have at least 1 character", field="tenant_id")
    if ":" in tenant_id or len(tenant_id) > 200:
        raise InvalidInput("a tenant id is 1-200 characters without ':'", field="tenant_id")
    return Bank.objects.active().filter(bank_id__startswith=f"{tenant_id}:").order_by("bank_id")


def dsar_forget_principal(*, banks: list[Bank], tenant_id: str, principal: str, actor: str,
                          reason: str | None = None, by: Principal | None = None) -> DsarOutcome:
    if not isinstance(principal, str) or not principal.strip():
        raise InvalidInput("String should have at least 1 character", field="principal")
    # A compliance erase in every bank: admin on each, checked for all before any is touched.
    for bank in banks:
        authorize(by, bank.bank_id, forget_permission(compliance=True))
    tag = f"{TAG_PREFIX}{principal}"
    outcome = DsarOutcome(tenant_id=tenant_id, principal=principal, tag_convention=tag)
    why = reason or f"DSAR: forget principal {principal} (tenant {tenant_id})"
    for bank in banks:
        outcome.banks_processed += 1
        try:
            ids = principal_memory_ids(bank, principal)
            forgotten = memory_forget(bank=bank, actor=actor, memory_ids=ids, compliance=True,
                                      reason=why) if ids else None
        except MemoryHubError as exc:
            outcome.details.append({"bank_id": bank.bank_id, "deleted": 0, "erased": 0, "error": exc.code})
            continue
        except Exception:  # one bank's failure is reported, as Astrocyte does, and the sweep goes on
            logger.exception("DSAR erase failed in bank %s", bank.bank_id)
            outcome.details.append({"bank_id": bank.bank_id, "deleted": 0, "erased": 0, "error": "internal_error"})
            continue
        deleted = forgotten.deleted_count if forgotten else 0
        erased = (forgotten.erased_count or 0) if forgotten else 0
        outcome.memories_deleted += deleted
        outcome.memories_erased += erased
        outcome.details.append({"bank_id": bank.bank_id, "deleted": deleted, "erased": erased})
    return outcome


def principal_memory_ids(bank: Bank, principal: str) -> list[str]:
    """The bank's memories written by ``principal`` or tagged ``principal:<principal>``."""
    written = Q(metadata__contains={AUTHOR_KEY: principal}) | Q(tags__contains=[f"{TAG_PREFIX}{principal}"])
    return list(Memory.objects.filter(bank=bank).filter(written).values_list("memory_id", flat=True))


__all__ = ["DsarOutcome", "dsar_forget_principal", "principal_memory_ids", "tenant_banks"]
