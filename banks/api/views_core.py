"""/v1 core operations: retain, recall, history, forget, and health probes."""

from __future__ import annotations

from django.db import DatabaseError, connection
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from banks.access import forget_permission
from banks.api import render
from banks.api.base import BankApiView, ok
from banks.api.schemas import ForgetRequest, HistoryRequest, RecallRequest, RetainRequest
from banks.models import Bank
from banks.selectors.ingest_sources import ingest_aggregate, ingest_sources
from banks.selectors.multibank import recall_many
from banks.selectors.recall import RecallFilters, RecallOutcome, recall_bank
from banks.selectors.recall_shaping import RecallOptions, parse_recall_options
from banks.services.bank_lookup import banks_to_read, requested_bank_ids
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.usage import (
    usage_record_access,
    usage_record_error,
    usage_record_recall,
    usage_record_retain,
)
from memoryhub.errors import DATABASE_RETRY_AFTER, MemoryHubError


class RetainApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, RetainRequest)
        bank = self.bank(request, body.bank_id, "write", create=True)
        actor = self.actor(request)
        outcome = memory_retain(
            bank=bank, text=body.content, actor=actor, author=actor, tags=body.tags, metadata=body.metadata,
            occurred_at=body.occurred_at, source=body.source, fact_type=body.fact_type,
            memory_layer=body.memory_layer, memory_id=body.memory_id, entities=body.entities,
            pii=body.pii_detected, near_dedup=not body.allow_duplicate, by=self.principal(request),
        )
        usage_record_retain(bank, deduplicated=outcome.deduplicated)
        return ok(render.retain_result(outcome))


class RecallApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, RecallRequest)
        outcome = recall_for(self, request, body, record=True)
        return ok(render.recall_result(outcome, include_trace=body.include_trace))


def recall_for(view: BankApiView, request: Request, body: RecallRequest, *, record: bool = False) -> RecallOutcome:
    """The recall; with ``record``, counted in the banks' usage once answered (or failed)."""
    filters = RecallFilters(tags=body.tags, fact_types=body.fact_types, time_range=body.time_bounds(),
                            as_of=body.as_of, layers=body.layers)
    bank_ids = requested_bank_ids(body.bank_id, body.banks)
    banks = banks_to_read(view.principal(request), bank_ids)
    options = parse_recall_options(layer_weights=body.layer_weights, detail_level=body.detail_level,
                                   external_context=body.external_context)
    try:
        outcome = _recall(banks, body, filters, bank_ids, options)
    except Exception as exc:
        if record and not (isinstance(exc, MemoryHubError) and exc.status < 500):
            usage_record_error(banks)
        raise
    if record:
        usage_record_recall(banks, outcome.hits)
    return outcome


def _recall(banks: list[Bank], body: RecallRequest, filters: RecallFilters, bank_ids: list[str],
            options: RecallOptions) -> RecallOutcome:
    """One bank, or every bank of ``banks`` (each checked for read before any is searched)."""
    # A ``banks`` list is a multi-bank recall (its trace says so) unless it only repeats ``bank_id``.
    if body.banks and not (body.bank_id and bank_ids == [body.bank_id]):
        return recall_many(
            banks, body.query, strategy=body.strategy or "parallel", max_results=body.max_results,
            max_tokens=body.max_tokens, filters=filters, include_directives=body.include_directives,
            include_observations=body.include_observations, min_results_to_stop=body.min_results_to_stop,
            cascade_order=body.cascade_order, bank_weights=body.bank_weights, options=options,
        )
    return recall_bank(banks[0], body.query, max_results=body.max_results, max_tokens=body.max_tokens,
                       filters=filters, include_directives=body.include_directives,
                       include_observations=body.include_observations, options=options)


class HistoryApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, HistoryRequest)
        bank = self.bank(request, body.bank_id, "read")
        outcome = recall_bank(bank, body.query, max_results=body.max_results, max_tokens=body.max_tokens,
                              filters=RecallFilters(tags=body.tags, as_of=body.as_of), include_directives=False)
        usage_record_access([bank], outcome.hits, kind="history")
        return ok({
            "hits": [render.memory_hit(h) for h in outcome.hits],
            "total_available": outcome.total_available,
            "truncated": outcome.truncated,
            "as_of": render.iso(body.as_of),
            "bank_id": bank.bank_id,
            "trace": render.recall_trace(outcome.trace),
        })


class ForgetApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, ForgetRequest)
        # Wiping a whole bank or erasing for compliance is an admin act; the rest needs forget (one rule,
        # banks.access.forget_permission, which the service checks again against the caller).
        bank = self.bank(request, body.bank_id, forget_permission(scope=body.scope, compliance=body.compliance,
                                                                  erase=body.erase))
        outcome = memory_forget(
            bank=bank, actor=self.actor(request), memory_ids=body.memory_ids, tags=body.tags, scope=body.scope,
            before_date=body.before_date, archive=body.archive, compliance=body.compliance, erase=body.erase,
            reason=body.reason or "", by=self.principal(request),
        )
        return ok(render.forget_result(outcome))


class LiveApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


class HealthApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    def get(self, request: Request) -> Response:
        import time

        from django.utils import timezone

        started = time.perf_counter()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                row = cursor.fetchone()
            healthy, message = bool(row), (f"postgresql ok, pgvector {row[0]}" if row else "pgvector missing")
        except Exception as exc:  # the probe reports any database failure instead of raising
            healthy, message = False, f"database unavailable: {exc.__class__.__name__}"
        from banks.providers.embeddings import embedder_status

        embeddings = embedder_status()
        if embeddings["fallback"]:
            # Still serving recall by keyword, but its banks refuse writes until the model loads: say so.
            message += (f"; embeddings: {embeddings['configured']} could not load; writes to its banks are "
                        "refused and recall answers by keyword")
        body = {"healthy": healthy, "message": message,
                "latency_ms": round((time.perf_counter() - started) * 1000, 3),
                "last_check_at": timezone.now().isoformat(), "embeddings": embeddings}
        if healthy:
            return Response(body)
        return Response(body, status=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER)})


class IngestHealthApi(APIView):
    """Astrocyte's /health/ingest: every push-ingest source (webhook) with its state and last delivery or
    error, and the aggregate. Unauthenticated like every probe, so it names no bank (see /v1/admin/sources)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes: list = []

    def get(self, request: Request) -> Response:
        try:
            states = ingest_sources()
        except DatabaseError as exc:  # the probe reports a database failure instead of raising
            message = f"database unavailable: {exc.__class__.__name__}"
            return Response({"status": "degraded", "aggregate": {"healthy": False, "message": message},
                             "sources": []}, status=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER)})
        healthy, message = ingest_aggregate(states)
        return Response({"status": "ok" if healthy else "degraded",
                         "aggregate": {"healthy": healthy, "message": message},
                         "sources": [render.ingest_source(s) for s in states]})


class DebugRecallApi(BankApiView):
    """Astrocyte's /v1/debug/recall: the trace and how many hits (Astrocyte's count is always 0; ours is real)."""

    def post(self, request: Request) -> Response:
        body = self.body(request, RecallRequest)
        outcome = recall_for(self, request, body)
        return ok({"trace": render.recall_trace(outcome.trace), "result_count": len(outcome.hits)})
