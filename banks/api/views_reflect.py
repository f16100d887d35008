"""/v1 reflect, audit, compile, graph/search and graph/neighbors."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from banks.api import render_live as render
from banks.api.base import BankApiView, ok
from banks.api.schemas_live import (
    AuditRequest,
    CompileRequest,
    GraphNeighborsRequest,
    GraphSearchRequest,
    ReflectRequest,
)
from banks.selectors.graph import graph_neighbors, graph_search
from banks.services.bank_lookup import banks_to_read, requested_bank_ids
from banks.services.compile import bank_compile
from banks.services.coverage import bank_audit
from banks.services.reflect import reflect


class ReflectApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, ReflectRequest)
        banks = banks_to_read(self.principal(request), requested_bank_ids(body.bank_id, body.banks))
        outcome = reflect(banks=banks, query=body.query, max_tokens=body.max_tokens, tags=body.tags,
                          include_directives=body.include_directives, strategy=body.strategy or "parallel")
        return ok({
            "answer": outcome.answer,
            "confidence": outcome.confidence,
            "sources": [render.memory_hit(h) for h in outcome.sources] if body.include_sources else None,
            "observations": outcome.observations or None,
            "authority_context": None,
            "directives": outcome.directives,
        })


class AuditApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, AuditRequest)
        bank = self.bank(request, body.bank_id, "read")
        outcome = bank_audit(bank=bank, scope=body.scope, max_memories=body.max_memories,
                             max_tokens=body.max_tokens, tags=body.tags)
        return ok({
            "scope": outcome.scope,
            "bank_id": outcome.bank_id,
            "gaps": [{"topic": g.topic, "severity": g.severity, "reason": g.reason} for g in outcome.gaps],
            "coverage_score": outcome.coverage_score,
            "memories_scanned": outcome.memories_scanned,
            "trace": render.recall_trace(outcome.trace),
        })


class CompileApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, CompileRequest)
        # Astrocyte's gateway asks read for compile: it derives pages from what the caller may read.
        bank = self.bank(request, body.bank_id, "read")
        outcome = bank_compile(bank=bank, actor=self.actor(request), scope=body.scope)
        return ok({
            "bank_id": outcome.bank_id, "scopes_compiled": outcome.scopes_compiled,
            "pages_created": outcome.pages_created, "pages_updated": outcome.pages_updated,
            "noise_memories": outcome.noise_memories, "tokens_used": outcome.tokens_used,
            "elapsed_ms": outcome.elapsed_ms, "error": outcome.error,
        })


class GraphSearchApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, GraphSearchRequest)
        bank = self.bank(request, body.bank_id, "read")
        return ok({"entities": [render.entity(e) for e in graph_search(bank=bank, query=body.query,
                                                                        limit=body.limit)]})


class GraphNeighborsApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, GraphNeighborsRequest)
        bank = self.bank(request, body.bank_id, "read")
        hits = graph_neighbors(bank=bank, entity_ids=body.entity_ids, max_depth=body.max_depth, limit=body.limit)
        return ok({"hits": [render.graph_hit(h) for h in hits]})
