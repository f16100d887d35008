"""The rest of Astrocyte 0.22's MCP tools, on the same services and selectors as the REST routes:
history, audit, compile, graph search/neighbours, mental-model refresh, multi-bank recall, and the
admin tools (banks, health, lifecycle, bank health, legal holds)."""

from __future__ import annotations

import time
from typing import Any

from django.db import connection
from django.utils import timezone

from banks.access import Principal
from banks.api import render, render_live
from banks.models import Bank
from banks.selectors.bank_health import MAX_HEALTH_BANKS, bank_health
from banks.selectors.graph import graph_neighbors, graph_search
from banks.selectors.multibank import recall_many
from banks.selectors.recall import RecallFilters, recall_bank
from banks.selectors.recall_shaping import RecallOptions
from banks.services.compile import bank_compile
from banks.services.coverage import bank_audit
from banks.services.holds import hold_release, hold_set
from banks.services.lifecycle import lifecycle_run
from banks.services.mental_models import mental_model_get, mental_model_refresh
from banks.services.usage import usage_record_access, usage_record_recall
from memoryhub.errors import InvalidInput


def clamp(a: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = a.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float | str) or not str(value).lstrip("-").isdigit():
        raise InvalidInput("must be a whole number", field=key)
    return max(low, min(int(value), high))


def history(bank: Bank, actor: str, a: dict[str, Any], as_of: Any) -> dict[str, Any]:
    if as_of is None:
        raise InvalidInput("Field required", field="as_of")
    outcome = recall_bank(bank, a.get("query", ""), max_results=clamp(a, "max_results", 10, 1, 1000),
                          max_tokens=a.get("max_tokens"), filters=RecallFilters(tags=a.get("tags"), as_of=as_of),
                          include_directives=False)
    usage_record_access([bank], outcome.hits, kind="history")
    return {"hits": [render.memory_hit(h) for h in outcome.hits], "total_available": outcome.total_available,
            "truncated": outcome.truncated, "as_of": render.iso(as_of), "bank_id": bank.bank_id,
            "trace": render.recall_trace(outcome.trace)}


def recall_banks(banks: list[Bank], a: dict[str, Any], filters: RecallFilters,
                 options: RecallOptions | None = None) -> dict[str, Any]:
    outcome = recall_many(banks, a.get("query", ""), strategy=a.get("strategy") or "parallel",
                          max_results=clamp(a, "max_results", 10, 1, 1000), max_tokens=a.get("max_tokens"),
                          filters=filters, options=options)
    usage_record_recall(banks, outcome.hits)
    return render.recall_result(outcome)


def audit(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    outcome = bank_audit(bank=bank, scope=str(a.get("scope") or ""), max_memories=clamp(a, "max_memories", 50, 1, 1000),
                         max_tokens=a.get("max_tokens"), tags=a.get("tags"))
    return {"scope": outcome.scope, "bank_id": outcome.bank_id,
            "gaps": [{"topic": g.topic, "severity": g.severity, "reason": g.reason} for g in outcome.gaps],
            "coverage_score": outcome.coverage_score, "memories_scanned": outcome.memories_scanned,
            "trace": render.recall_trace(outcome.trace)}


def compile_bank(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    outcome = bank_compile(bank=bank, actor=by.label, scope=a.get("scope"))
    return {"bank_id": outcome.bank_id, "scopes_compiled": outcome.scopes_compiled,
            "pages_created": outcome.pages_created, "pages_updated": outcome.pages_updated,
            "noise_memories": outcome.noise_memories, "tokens_used": outcome.tokens_used,
            "elapsed_ms": outcome.elapsed_ms, "error": outcome.error}


def search_graph(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    found = graph_search(bank=bank, query=str(a.get("query") or ""), limit=clamp(a, "limit", 10, 1, 1000))
    return {"entities": [render_live.entity(e) for e in found]}


def graph_neighbours(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    ids = a.get("entity_ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InvalidInput("must be a list of strings", field="entity_ids")
    hits = graph_neighbors(bank=bank, entity_ids=ids, max_depth=clamp(a, "max_depth", 2, 0, 6),
                           limit=clamp(a, "limit", 20, 1, 1000))
    return {"hits": [render_live.graph_hit(h) for h in hits]}


def refresh_model(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    model = mental_model_get(bank=bank, model_id=str(a.get("model_id") or ""))
    model = mental_model_refresh(model=model, actor=by.label, content=a.get("content"),
                                 add_source_ids=a.get("new_source_ids"), by=by)
    return {"model_id": model.model_id, "revision": model.revision, "source_count": len(model.source_ids)}


def run_lifecycle(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    outcome = lifecycle_run(bank=bank, actor=by.label, by=by)
    return {"bank_id": bank.bank_id, "archived_count": outcome.archived_count, "deleted_count": outcome.deleted_count,
            "skipped_count": outcome.skipped_count, "actions": outcome.actions,
            "actions_truncated": outcome.actions_truncated, "job_id": outcome.job_id}


def health_of_bank(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    view = bank_health(None if bank.is_never_written else bank, bank_id=bank.bank_id)
    return {"bank_id": view.bank_id, "score": view.score, "status": view.status, "issues": view.issues,
            "metrics": view.metrics, "assessed_at": render.iso(view.assessed_at)}


# Astrocyte's memory_bank_health takes this bank id for "every bank".
ALL_BANKS = "__all__"


def health_of_all_banks(principal: Principal) -> dict[str, Any]:
    """Every bank the caller administers (as GET /v1/admin/banks/health lists them)."""
    return {"banks": [health_of_bank(bank, principal, {})
                      for bank in principal.banks_with("admin")[:MAX_HEALTH_BANKS]]}


def set_hold(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    hold = hold_set(bank=bank, hold_id=a.get("hold_id", ""), reason=a.get("reason", ""),
                    set_by=a.get("set_by") or by.label, actor=by.label, by=by)
    return {"hold_id": hold.hold_id, "bank_id": bank.bank_id, "reason": hold.reason,
            "set_at": render.iso(hold.set_at), "set_by": hold.set_by}


def release_hold(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    hold_id = str(a.get("hold_id") or "")
    return {"bank_id": bank.bank_id, "hold_id": hold_id,
            "released": hold_release(bank=bank, hold_id=hold_id, actor=by.label, reason=a.get("reason") or "",
                                         by=by)}


def list_banks(principal: Principal, a: dict[str, Any]) -> dict[str, Any]:
    # Astrocyte's "default" is the server's configured default bank; MemoryHub has none (bank_id is required).
    # Bank names are told only to a caller that may read them (a write-only token learns none).
    principal.require_some_read()
    return {"banks": list(principal.readable_banks().order_by("bank_id").values_list("bank_id", flat=True)[:1000]),
            "default": None}


def health(principal: Principal, a: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return {"healthy": bool(row), "message": f"postgresql ok, pgvector {row[0]}" if row else "pgvector missing",
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
            "last_check_at": timezone.now().isoformat()}
