"""Observations and directives over REST, shaped like Astrocyte's Python/MCP calls."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from banks.api import render_live as render
from banks.api.base import BankApiView, ok
from banks.api.schemas_live import (
    BankQuery,
    DirectiveCreateRequest,
    DirectiveUpdateRequest,
    ObservationCreateRequest,
    ObservationListQuery,
    ObservationsInvalidateRequest,
    ObservationUpdateRequest,
)
from banks.models import MentalModel
from banks.selectors.mental_models import mental_models_listed
from banks.selectors.observations import observation_view, observations_listed
from banks.services.consolidation_jobs import consolidation_start
from banks.services.directives import directive_create, directive_update
from banks.services.mental_models import mental_model_delete, mental_model_get
from banks.services.observations import (
    observation_create,
    observation_delete,
    observation_get,
    observation_update,
    observations_invalidate_for_memories,
)

DIRECTIVE = MentalModel.Kind.DIRECTIVE


class ObservationsApi(BankApiView):
    def get(self, request: Request) -> Response:
        query = self.query(request, ObservationListQuery)
        bank = self.bank(request, query.bank_id, "read")
        views = observations_listed(bank, scope=query.scope, trend=query.trend, limit=query.limit,
                                 include_invalidated=query.include_invalidated)
        return ok({"observations": [render.observation(v) for v in views]})

    def post(self, request: Request) -> Response:
        body = self.body(request, ObservationCreateRequest)
        bank = self.bank(request, body.bank_id, "write", create=True)
        row = observation_create(bank=bank, text=body.text, actor=self.actor(request), source_ids=body.source_ids,
                                 scope=body.scope, confidence=body.confidence, by=self.principal(request))
        return ok(render.observation(observation_view(row)))


class ObservationApi(BankApiView):
    def get(self, request: Request, observation_id: str) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "read")
        return ok(render.observation(observation_view(observation_get(bank=bank, observation_id=observation_id))))

    def patch(self, request: Request, observation_id: str) -> Response:
        body = self.body(request, ObservationUpdateRequest)
        bank = self.bank(request, body.bank_id, "write")
        row = observation_update(
            observation=observation_get(bank=bank, observation_id=observation_id), actor=self.actor(request),
            text=body.text, confidence=body.confidence, scope=body.scope, add_source_ids=body.add_source_ids,
            remove_source_ids=body.remove_source_ids, reason=body.reason, by=self.principal(request),
        )
        return ok(render.observation(observation_view(row)))

    def delete(self, request: Request, observation_id: str) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "forget")
        row = observation_get(bank=bank, observation_id=observation_id)
        return ok({"deleted": observation_delete(observation=row, actor=self.actor(request),
                                                  by=self.principal(request))})


class ObservationsInvalidateApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, ObservationsInvalidateRequest)
        bank = self.bank(request, body.bank_id, "forget")
        count = observations_invalidate_for_memories(bank=bank, memory_ids=body.source_ids,
                                                     actor=self.actor(request), reason="invalidated through the API")
        return ok({"deleted": count})


class ObservationsConsolidateApi(BankApiView):
    def post(self, request: Request) -> Response:
        bank = self.bank(request, self.body(request, BankQuery).bank_id, "write", must_exist=True)
        job = consolidation_start(bank=bank, actor=self.actor(request))
        return ok({"job_id": job.pk, "state": job.state, "kind": job.kind}, status=202)


class DirectivesApi(BankApiView):
    def get(self, request: Request) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "read")
        rows = mental_models_listed(bank, kind=DIRECTIVE, by_priority=True)
        return ok({"directives": [render.directive(d) for d in rows]})

    def post(self, request: Request) -> Response:
        body = self.body(request, DirectiveCreateRequest)
        bank = self.bank(request, body.bank_id, "write", create=True)
        row = directive_create(bank=bank, rule_text=body.rule_text, actor=self.actor(request),
                               directive_id=body.directive_id, scope=body.scope, priority=body.priority,
                               by=self.principal(request))
        return ok(render.directive(row))


class DirectiveApi(BankApiView):
    def get(self, request: Request, directive_id: str) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "read")
        return ok(render.directive(mental_model_get(bank=bank, model_id=directive_id, kind=DIRECTIVE)))

    def patch(self, request: Request, directive_id: str) -> Response:
        body = self.body(request, DirectiveUpdateRequest)
        bank = self.bank(request, body.bank_id, "write")
        row = directive_update(
            directive=mental_model_get(bank=bank, model_id=directive_id, kind=DIRECTIVE), actor=self.actor(request),
            rule_text=body.rule_text, scope=body.scope, is_active=body.is_active, priority=body.priority,
            expected_revision=body.expected_revision, by=self.principal(request),
        )
        return ok(render.directive(row))

    def delete(self, request: Request, directive_id: str) -> Response:
        bank = self.bank(request, self.query(request, BankQuery).bank_id, "forget")
        row = mental_model_get(bank=bank, model_id=directive_id, kind=DIRECTIVE)
        return ok({"deleted": mental_model_delete(model=row, actor=self.actor(request), by=self.principal(request))})


class DirectiveDeactivateApi(BankApiView):
    def post(self, request: Request, directive_id: str) -> Response:
        bank = self.bank(request, self.body(request, BankQuery).bank_id, "write")
        row = directive_update(directive=mental_model_get(bank=bank, model_id=directive_id, kind=DIRECTIVE),
                               actor=self.actor(request), is_active=False, by=self.principal(request))
        return ok(render.directive(row))
