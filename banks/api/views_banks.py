"""/v1/banks: list the banks a token can see, create, read, update, delete (guarded)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from banks.api import render_live as render
from banks.api.base import BankApiView, ok
from banks.api.schemas_live import BankCreateRequest, BankDeleteQuery, BankUpdateRequest
from banks.models import Memory
from banks.selectors.search_language import context_rebuild_job, search_reindex_job
from banks.services.banks import bank_create, bank_delete, bank_update
from banks.turn_context import context_turns
from memoryhub.errors import AccessDenied


class BanksApi(BankApiView):
    def get(self, request: Request) -> Response:
        principal = self.principal(request)
        principal.require_some_read()
        rows = principal.readable_banks().order_by("bank_id")[:1000]
        return ok({"banks": [render.bank(b) for b in rows]})

    def post(self, request: Request) -> Response:
        body = self.body(request, BankCreateRequest)
        principal = self.principal(request)
        if not principal.can(body.bank_id, "admin"):
            raise AccessDenied(principal.label, "admin", body.bank_id)
        bank = bank_create(bank_id=body.bank_id, actor=principal.label, name=body.name,
                           description=body.description, config=body.config)
        return ok(render.bank(bank))


class BankApi(BankApiView):
    def get(self, request: Request, bank_id: str) -> Response:
        bank = self.bank(request, bank_id, "read", must_exist=True)
        live = Memory.objects.live().filter(bank=bank)
        counts = {"memories": live.count(), "observations": bank.observations.live().count(),
                  "mental_models": bank.mental_models.live().models_only().count(),
                  "directives": bank.mental_models.live().directives().count()}
        return ok(render.bank(bank, counts))

    def patch(self, request: Request, bank_id: str) -> Response:
        body = self.body(request, BankUpdateRequest)
        bank = self.bank(request, bank_id, "admin", must_exist=True)
        changes = {k: v for k, v in body.model_dump(exclude_unset=True).items() if v is not None}
        turns_before = context_turns(bank.config)
        bank = bank_update(bank=bank, actor=self.actor(request), by=self.principal(request), **changes)
        job = search_reindex_job(bank)
        # A new context window rebuilds the stored turns' contexts in a job (started by bank_update).
        rebuild = context_rebuild_job(bank) if context_turns(bank.config) != turns_before else None
        # A language change on a large bank re-indexes it in a job the client can follow.
        return ok({**render.bank(bank), "search_reindex_job_id": job.pk if job is not None else None,
                   "context_rebuild_job_id": rebuild.pk if rebuild is not None else None})

    def delete(self, request: Request, bank_id: str) -> Response:
        query = self.query(request, BankDeleteQuery)
        bank = self.bank(request, bank_id, "admin", must_exist=True)
        job = bank_delete(bank=bank, actor=self.actor(request), confirm=query.confirm, reason=query.reason,
                          mode="async" if query.run_async else "auto", by=self.principal(request))
        if job is None:
            return ok({"deleted": True, "bank_id": bank_id})
        # Too big to delete inside the request: the bank is gone for every client now, its rows go on the
        # worker. Poll the job at Location.
        response = ok({"deleted": False, "accepted": True, "bank_id": bank_id, "job_id": job.pk,
                       "state": job.state, "progress": {"done": job.progress_done, "total": job.progress_total}},
                      status=202)
        response["Location"] = f"/v1/jobs/{job.pk}?bank_id={bank_id}"
        return response
