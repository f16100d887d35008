"""Astrocyte's tenant routes: /v1/dsar/forget_principal and /v1/admin/tenants/<tenant_id>/storage.

A tenant is every bank whose id starts with ``<tenant_id>:``. Both routes act on all of them, so
the caller must hold ``admin`` on each (a compliance erase and billing data are admin matters); a
caller who may not is refused before anything is done, in words that name no bank.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from rest_framework.request import Request
from rest_framework.response import Response

from banks.api.base import BankApiView, ok
from banks.api.render import iso
from banks.api.wire import WireModel
from banks.models import Bank
from banks.selectors.tenant_storage import tenant_storage
from banks.services.dsar import dsar_forget_principal, tenant_banks
from memoryhub.errors import AccessDenied, NotFound


class DsarForgetPrincipalRequest(WireModel):
    tenant_id: str = Field(min_length=1)
    principal: str = Field(min_length=1)
    reason: str | None = None


class TenantNotFound(NotFound):
    code = "tenant_not_found"


class TenantView(BankApiView):
    def tenant(self, request: Request, tenant_id: str) -> list[Bank]:
        """The tenant's banks, if the caller administers all of them. A caller whose grants cover the whole
        tenant (``<tenant>:*``) may learn that it has none; to anyone else a tenant without banks, one
        with a bank they may not administer and one they have no grant on at all answer the same 403,
        naming only the tenant they asked for."""
        principal = self.principal(request)
        banks = list(tenant_banks(tenant_id))
        if principal.can(f"{tenant_id}:*", "admin"):
            return banks
        if not banks or not all(principal.can(bank.bank_id, "admin") for bank in banks):
            raise AccessDenied(principal.label, "admin", f"{tenant_id}:*")
        return banks


class DsarForgetPrincipalApi(TenantView):
    def post(self, request: Request) -> Response:
        body = self.body(request, DsarForgetPrincipalRequest)
        banks = self.tenant(request, body.tenant_id)
        outcome = dsar_forget_principal(banks=banks, tenant_id=body.tenant_id, principal=body.principal,
                                        actor=self.actor(request), reason=body.reason, by=self.principal(request))
        return ok({"tenant_id": outcome.tenant_id, "principal": outcome.principal,
                   "tag_convention": outcome.tag_convention, "banks_processed": outcome.banks_processed,
                   "memories_deleted": outcome.memories_deleted, "memories_erased": outcome.memories_erased,
                   "details": outcome.details})


class TenantStorageApi(TenantView):
    def get(self, request: Request, tenant_id: str) -> Response:
        banks = self.tenant(request, tenant_id)
        if not banks:
            raise TenantNotFound(f"no bank belongs to tenant '{tenant_id}' (bank ids '{tenant_id}:...')")
        usage = tenant_storage(tenant_id, banks)
        breakdown: dict[str, Any] = {
            "heap_bytes": usage.heap_bytes, "index_bytes": usage.index_bytes, "table_count": usage.table_count,
            "memory_count": usage.memory_count, "last_write_at": iso(usage.last_write_at),
            "warnings": usage.warnings,
        }
        return ok({"tenant_id": tenant_id, "schema": "public", "bytes_used": usage.bytes_used,
                   "measured_at": iso(usage.measured_at), "snapshot_age_seconds": 0, "breakdown": breakdown,
                   "banks": [b.bank_id for b in banks]})
