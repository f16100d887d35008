"""/v1/admin: legal holds, lifecycle policies and runs, bank health, each gated by ``admin`` on the bank concerned."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from banks.api.base import BankApiView, ok
from banks.api.render import ingest_source, iso
from banks.api.schemas_admin import (
    HoldReleaseQuery,
    HoldSetRequest,
    LifecyclePolicyRequest,
    LifecycleRunRequest,
)
from banks.models import Bank, LegalHold, LifecyclePolicy, WebhookSource
from banks.selectors.bank_health import MAX_HEALTH_BANKS, BankHealthView, bank_health
from banks.selectors.holds import bank_holds, bank_lifecycle_policy
from banks.selectors.ingest_sources import MAX_SOURCES, ingest_sources
from banks.services.holds import hold_release, hold_set
from banks.services.lifecycle import LifecycleOutcome, lifecycle_policy_set, lifecycle_run
from memoryhub.errors import BankNotFound


def legal_hold(hold: LegalHold) -> dict[str, Any]:
    return {"hold_id": hold.hold_id, "bank_id": hold.bank.bank_id, "reason": hold.reason,
            "set_at": iso(hold.set_at), "set_by": hold.set_by}


def health_body(view: BankHealthView) -> dict[str, Any]:
    details = dict(view.details)
    for key in ("last_retain_at", "last_recalled_at", "last_error_at"):
        details[key] = iso(details.get(key))
    return {"bank_id": view.bank_id, "score": view.score, "status": view.status, "issues": view.issues,
            "metrics": view.metrics, "assessed_at": iso(view.assessed_at), **details}


class AdminBankView(BankApiView):
    def existing_bank(self, request: Request, bank_id: str) -> Bank | None:
        """The bank if it exists; a granted id that holds nothing yet is None, never a 404."""
        try:
            bank = self.bank(request, bank_id, "admin", must_exist=True)
        except BankNotFound:
            return None
        return bank

    def admin_banks(self, request: Request) -> list[Bank]:
        return self.principal(request).banks_with("admin")


class AdminBanksApi(AdminBankView):
    def get(self, request: Request) -> Response:
        return ok({"banks": [b.bank_id for b in self.admin_banks(request)]})


class AdminSourcesApi(AdminBankView):
    """Astrocyte's /v1/admin/sources: the push-ingest sources of the banks the caller administers."""

    def get(self, request: Request) -> Response:
        sources = (WebhookSource.objects.select_related("bank")
                   .filter(bank__in=self.admin_banks(request)).order_by("source_id")[:MAX_SOURCES])
        return ok({"sources": [ingest_source(s, admin=True) for s in ingest_sources(sources)]})


class AdminBanksHealthApi(AdminBankView):
    def get(self, request: Request) -> Response:
        banks = self.admin_banks(request)[:MAX_HEALTH_BANKS]
        return ok({"banks": [health_body(bank_health(b)) for b in banks]})


class AdminBankHealthApi(AdminBankView):
    def get(self, request: Request, bank_id: str) -> Response:
        return ok(health_body(bank_health(self.existing_bank(request, bank_id), bank_id=bank_id)))


class HoldApi(AdminBankView):
    def get(self, request: Request, bank_id: str) -> Response:
        bank = self.existing_bank(request, bank_id)
        holds = list(bank_holds(bank).select_related("bank")) if bank is not None else []
        return ok({"bank_id": bank_id, "under_hold": bool(holds), "holds": [legal_hold(h) for h in holds]})

    def post(self, request: Request, bank_id: str) -> Response:
        body = self.body(request, HoldSetRequest)
        # As Astrocyte, a hold may be placed on a bank before anything is written to it.
        bank = self.bank(request, bank_id, "admin", create=True)
        hold = hold_set(bank=bank, hold_id=body.hold_id, reason=body.reason, set_by=body.set_by,
                        actor=self.actor(request), by=self.principal(request))
        return ok(legal_hold(hold))


class HoldReleaseApi(AdminBankView):
    def delete(self, request: Request, bank_id: str, hold_id: str) -> Response:
        query = self.query(request, HoldReleaseQuery)
        bank = self.existing_bank(request, bank_id)
        released = bank is not None and hold_release(bank=bank, hold_id=hold_id, actor=self.actor(request),
                                                     reason=query.reason, by=self.principal(request))
        return ok({"bank_id": bank_id, "hold_id": hold_id, "released": released})


def lifecycle_result(outcome: LifecycleOutcome) -> dict[str, Any]:
    return {"archived_count": outcome.archived_count, "deleted_count": outcome.deleted_count,
            "skipped_count": outcome.skipped_count, "actions": outcome.actions,
            "actions_truncated": outcome.actions_truncated, "job_id": outcome.job_id}


def lifecycle_policy(bank_id: str, row: LifecyclePolicy | None) -> dict[str, Any]:
    if row is None:
        return {"bank_id": bank_id, "enabled": False, "delete_after_days": None, "archive_after_days": None,
                "fact_type_overrides": {}, "exempt_tags": [], "last_run_at": None}
    return {"bank_id": bank_id, "enabled": row.enabled, "delete_after_days": row.delete_after_days,
            "archive_after_days": row.archive_after_days, "fact_type_overrides": row.fact_type_overrides,
            "exempt_tags": list(row.exempt_tags), "last_run_at": iso(row.last_run_at)}


class LifecycleRunApi(AdminBankView):
    def post(self, request: Request) -> Response:
        body = self.body(request, LifecycleRunRequest)
        bank = self.existing_bank(request, body.bank_id)
        outcome = lifecycle_run(bank=bank, actor=self.actor(request), by=self.principal(request)) if bank \
            else LifecycleOutcome()
        return ok(lifecycle_result(outcome))


class LifecyclePolicyApi(AdminBankView):
    def get(self, request: Request, bank_id: str) -> Response:
        bank = self.existing_bank(request, bank_id)
        return ok(lifecycle_policy(bank_id, bank_lifecycle_policy(bank)))

    def put(self, request: Request, bank_id: str) -> Response:
        body = self.body(request, LifecyclePolicyRequest)
        bank = self.bank(request, bank_id, "admin", create=True)
        row = lifecycle_policy_set(bank=bank, actor=self.actor(request), by=self.principal(request),
                                   **body.model_dump(exclude_unset=True))
        return ok(lifecycle_policy(bank_id, row))
