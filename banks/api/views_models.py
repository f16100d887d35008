"""/v1/mental-models (Astrocyte's routes) and our revision, diff, revert and delta-update routes."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from banks.api import render_live as render
from banks.api.base import BankApiView, ok
from banks.api.schemas_live import (
    BankQuery,
    DiffQuery,
    MentalModelCreateRequest,
    MentalModelListQuery,
    MentalModelRefreshRequest,
    MentalModelRevertRequest,
    MentalModelUpdateRequest,
)
from banks.models import MentalModel
from banks.selectors.mental_models import mental_models_listed, revision_diff, revision_get, revision_list
from banks.services.mental_models import (
    mental_model_apply_delta,
    mental_model_create,
    mental_model_delete,
    mental_model_get,
    mental_model_id_for,
    mental_model_refresh,
    mental_model_revert,
)
from memoryhub.errors import NotFound

GENERAL = MentalModel.Kind.GENERAL


class MentalModelsApi(BankApiView):
    def get(self, request: Request) -> Response:
        query = self.query(request, MentalModelListQuery)
        bank = self.bank(request, query.bank_id, "read")
        rows = mental_models_listed(bank, scope=query.scope, kind=query.kind)
        return ok({"models": [render.mental_model(m) for m in rows]})

    def post(self, request: Request) -> Response:
        body = self.body(request, MentalModelCreateRequest)
        bank = self.bank(request, body.bank_id, "write", create=True)
        model = mental_model_create(
            bank=bank, model_id=body.model_id or mental_model_id_for(body.title), title=body.title, actor=self.actor(request), content=body.content,
            sections=body.sections, structured_doc=body.structured_doc, scope=body.scope,
            source_ids=body.source_ids, by=self.principal(request),
        )
        return ok(render.mental_model(model))


class MentalModelApi(BankApiView):
    def get(self, request: Request, model_id: str) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "read")
        return ok(render.mental_model(mental_model_get(bank=bank, model_id=model_id)))

    def delete(self, request: Request, model_id: str) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "forget")
        try:
            model = mental_model_get(bank=bank, model_id=model_id)
        except NotFound:
            # Astrocyte answers a missing or already deleted model with deleted: false, not 404.
            return ok({"deleted": False})
        return ok({"deleted": mental_model_delete(model=model, actor=self.actor(request),
                                                  by=self.principal(request))})

    def patch(self, request: Request, model_id: str) -> Response:
        return MentalModelUpdateApi.dispatch_update(self, request, model_id)


class MentalModelRefreshApi(BankApiView):
    def post(self, request: Request, model_id: str) -> Response:
        body = self.body(request, MentalModelRefreshRequest)
        bank = self.bank(request, body.bank_id, "write")
        model = mental_model_get(bank=bank, model_id=model_id)
        model = mental_model_refresh(model=model, actor=self.actor(request), content=body.content,
                                     source_ids=body.source_ids, add_source_ids=body.new_source_ids,
                                     expected_revision=body.expected_revision, by=self.principal(request))
        return ok(render.mental_model(model))


class MentalModelUpdateApi(BankApiView):
    def post(self, request: Request, model_id: str) -> Response:
        return self.dispatch_update(self, request, model_id)

    @staticmethod
    def dispatch_update(view: BankApiView, request: Request, model_id: str) -> Response:
        body = view.body(request, MentalModelUpdateRequest)
        bank = view.bank(request, body.bank_id, "write")
        model = mental_model_get(bank=bank, model_id=model_id)
        model, result = mental_model_apply_delta(model=model, operations=body.operations, actor=view.actor(request),
                                                 expected_revision=body.expected_revision, by=view.principal(request))
        return ok({"model": render.mental_model(model), "revision": model.revision, **result.summary()})


class MentalModelRevisionsApi(BankApiView):
    def get(self, request: Request, model_id: str) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "read")
        model = mental_model_get(bank=bank, model_id=model_id, include_deleted=True)
        return ok({"model_id": model.model_id, "revisions": [render.revision(r, full=False)
                                                             for r in revision_list(model=model)[:1000]]})


class MentalModelRevisionApi(BankApiView):
    def get(self, request: Request, model_id: str, number: int) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "read")
        model = mental_model_get(bank=bank, model_id=model_id, include_deleted=True)
        return ok(render.revision(revision_get(model=model, number=number)))


class MentalModelDiffApi(BankApiView):
    def get(self, request: Request, model_id: str) -> Response:
        query = self.query(request, DiffQuery)
        bank = self.bank(request, query.bank_id, "read")
        model = mental_model_get(bank=bank, model_id=model_id, include_deleted=True)
        diff = revision_diff(model=model, from_revision=query.from_revision, to_revision=query.to_revision)
        return ok({
            "model_id": model.model_id, "from": diff.from_revision, "to": diff.to_revision, "unified": diff.unified,
            "rows": [{"kind": r.kind, "left": r.left, "right": r.right, "left_no": r.left_no,
                      "right_no": r.right_no} for r in diff.rows],
            "sections_added": diff.sections_added, "sections_removed": diff.sections_removed,
            "sections_changed": diff.sections_changed,
        })


class MentalModelRevertApi(BankApiView):
    def post(self, request: Request, model_id: str) -> Response:
        body = self.body(request, MentalModelRevertRequest)
        bank = self.bank(request, body.bank_id, "write")
        model = mental_model_get(bank=bank, model_id=model_id)
        model = mental_model_revert(model=model, to_revision=body.revision, actor=self.actor(request),
                                    expected_revision=body.expected_revision, by=self.principal(request))
        return ok(render.mental_model(model))
