"""/v1/admin: legal holds and bank health, each gated by ``admin`` on the bank concerned."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from banks.api.base import BankApiView, ok
from banks.api.render import iso
from banks.api.schemas_admin import HoldReleaseQuery, HoldSetRequest
from banks.models import Bank, LegalHold
from banks.selectors.bank_health import BankHealthView, bank_health
from banks.selectors.holds import bank_holds
from banks.services.holds import hold_release, hold_set
from memoryhub.errors import BankNotFound

MAX_HEALTH_BANKS = 100


def legal_hold(hold: LegalHold) -> dict[str, Any]:
    return {"hold_id": hold.hold_id, "bank_id": hold.bank.bank_id, "reason": hold.reason,
            "set_at": iso(hold.set_at), "set_by": hold.set_by}


def health_body(view: BankHealthView) -> dict[str, Any]:
    details = dict(view.details)
    details["last_retain_at"] = iso(details.get("last_retain_at"))
    return {"bank_id": view.bank_id, "score": view.score, "status": view.status, "issues": view.issues,
            "metrics": view.metrics, "assessed_at": iso(view.assessed_at), **details}


class AdminBankView(BankApiView):
    def existing_bank(self, request: Request, bank_id: str) -> Bank | None:
        """The bank if it exists; a granted id that holds nothing yet is None, never a 404."""
        try:
            return self.bank(request, bank_id, "admin")
        except BankNotFound:
            return None

    def admin_banks(self, request: Request) -> list[Bank]:
        principal = self.principal(request)
        return [b for b in principal.visible_banks().order_by("bank_id") if principal.can(b.bank_id, "admin")]


class AdminBanksApi(AdminBankView):
    def get(self, request: Request) -> Response:
        return ok({"banks": [b.bank_id for b in self.admin_banks(request)]})


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
                        actor=self.actor(request))
        return ok(legal_hold(hold))


class HoldReleaseApi(AdminBankView):
    def delete(self, request: Request, bank_id: str, hold_id: str) -> Response:
        query = self.query(request, HoldReleaseQuery)
        bank = self.existing_bank(request, bank_id)
        released = bank is not None and hold_release(bank=bank, hold_id=hold_id, actor=self.actor(request),
                                                     reason=query.reason)
        return ok({"bank_id": bank_id, "hold_id": hold_id, "released": released})
