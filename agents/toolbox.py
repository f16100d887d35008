"""Every agent-facing tool in one table: its permission and what it calls. The REST routes and
the MCP server both dispatch through ``run_tool``, so a tool behaves the same on either."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from agents import tools_gateway as gateway
from agents.services.consolidate import agent_memory_reflect
from agents.services.tools import (
    agent_memory_add,
    agent_memory_delete,
    agent_memory_merge,
    agent_memory_search,
    agent_memory_update,
)
from agents.tool_args import tool_arguments
from banks.access import Principal
from banks.api import render
from banks.api.render_live import observation as observation_row
from banks.models import Bank
from banks.selectors.mental_models import mental_models_listed
from banks.selectors.observations import observation_view, observations_listed
from banks.selectors.recall import RecallFilters, recall_bank
from banks.selectors.recall_shaping import RecallOptions, parse_recall_options
from banks.services.bank_lookup import bank_for, banks_to_read, requested_bank_ids
from banks.services.directives import directive_create
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.mental_models import (
    mental_model_apply_delta,
    mental_model_create,
    mental_model_delete,
    mental_model_get,
    mental_model_id_for,
)
from banks.services.observations import observation_create, observation_delete, observation_get
from banks.services.reflect import reflect
from banks.services.usage import usage_record_access, usage_record_recall, usage_record_retain
from memoryhub.errors import InvalidInput, NotFound
from memoryhub.input_rules import check_storable, parse_time, utc_datetime


@dataclass
class Tool:
    name: str
    permission: str
    # Called with the bank and the caller: services that check a permission get the caller (``by``),
    # as from the REST views, so their own check decides here too.
    run: Callable[[Bank, Principal, dict[str, Any]], dict[str, Any]]
    description: str
    create_bank: bool = False


def _time(a: dict[str, Any], key: str) -> Any:
    raw = a.get(key)
    if raw is None or raw == "":
        return None
    parsed = parse_time(raw)
    if parsed is None:
        raise InvalidInput("not a date or date-time (ISO 8601 or epoch seconds)", field=key)
    return utc_datetime(parsed, key)


def _retain(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    outcome = memory_retain(bank=bank, text=a.get("content", ""), actor=by.label, author=by.label, tags=a.get("tags"),
                            metadata=a.get("metadata"), occurred_at=_time(a, "occurred_at"),
                            source=a.get("source"), by=by)
    usage_record_retain(bank, deduplicated=outcome.deduplicated)
    return render.retain_result(outcome)


def recall_options(a: dict[str, Any]) -> RecallOptions:
    return parse_recall_options(layer_weights=a.get("layer_weights"), detail_level=a.get("detail_level"),
                                external_context=a.get("external_context"))


def _recall(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    outcome = recall_bank(bank, a.get("query", ""), max_results=max(1, min(int(a.get("max_results") or 10), 1000)),
                          max_tokens=a.get("max_tokens"), filters=RecallFilters(
                              tags=a.get("tags"), fact_types=a.get("fact_types"),
                              as_of=_time(a, "as_of")), options=recall_options(a))
    usage_record_recall([bank], outcome.hits)
    return render.recall_result(outcome)


def _history(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    return gateway.history(bank, by.label, a, _time(a, "as_of"))


def _recall_filters(a: dict[str, Any]) -> RecallFilters:
    return RecallFilters(tags=a.get("tags"), fact_types=a.get("fact_types"), as_of=_time(a, "as_of"))


def _reflect(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    if not a.get("query"):
        # Without a question it is AgentOS's memory_reflect: a consolidation pass.
        return agent_memory_reflect(bank=bank, actor=by.label, topic=a.get("topic"), by=by)
    return _reflect_banks([bank], by, a)


def _reflect_banks(banks: list[Bank], by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    outcome = reflect(banks=banks, query=a["query"], max_tokens=a.get("max_tokens"), tags=a.get("tags"),
                      strategy=a.get("strategy") or "parallel")
    include_sources = a.get("include_sources", True)
    if not isinstance(include_sources, bool):
        raise InvalidInput("must be true or false", field="include_sources")
    return {"answer": outcome.answer, "confidence": outcome.confidence,
            "sources": [render.memory_hit(h) for h in outcome.sources] if include_sources else None,
            "observations": outcome.observations or None, "directives": outcome.directives}


def _forget(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    outcome = memory_forget(bank=bank, actor=by.label, memory_ids=a.get("memory_ids"), tags=a.get("tags"),
                            reason=a.get("reason") or "", by=by)
    return render.forget_result(outcome)


def _directive(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    row = directive_create(bank=bank, rule_text=a.get("rule_text", ""), actor=by.label,
                           directive_id=a.get("directive_id"), scope=a.get("scope") or "bank", by=by)
    return {"model_id": row.model_id, "kind": row.kind, "revision": row.revision}


def _list_observations(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    views = observations_listed(bank, scope=a.get("scope"), trend=a.get("trend"),
                             limit=max(1, min(int(a.get("limit") or 100), 1000)))
    return {"observations": [observation_row(v) for v in views]}


def _get_observation(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"observation": observation_row(observation_view(
            observation_get(bank=bank, observation_id=str(a.get("observation_id", "")))))}
    except NotFound:
        return {"observation": None}


def _create_observation(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    row = observation_create(bank=bank, text=a.get("text", ""), actor=by.label,
                             source_ids=a.get("source_ids") or a.get("evidence"), scope=a.get("scope"),
                             confidence=a.get("confidence", 0.9), by=by)
    return {"observation": observation_row(observation_view(row))}


def _delete_observation(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    try:
        row = observation_get(bank=bank, observation_id=str(a.get("observation_id", "")))
    except NotFound:
        return {"deleted": False}
    return {"deleted": observation_delete(observation=row, actor=by.label, by=by)}


def _list_models(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    return {"models": [{"model_id": m.model_id, "title": m.title, "scope": m.scope, "kind": m.kind,
                        "revision": m.revision, "refreshed_at": m.refreshed_at.isoformat(),
                        "source_count": len(m.source_ids)}
                       for m in mental_models_listed(bank, scope=a.get("scope"))]}


def _create_model(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    title = a.get("title") or a.get("name") or ""
    row = mental_model_create(bank=bank, model_id=a.get("model_id") or mental_model_id_for(title), title=title,
                              actor=by.label,
                              content=a.get("content"), sections=a.get("sections"), scope=a.get("scope") or "bank",
                              source_ids=a.get("source_ids"), by=by)
    return {"model_id": row.model_id, "revision": row.revision, "kind": row.kind, "title": row.title}


def _update_model(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    model = mental_model_get(bank=bank, model_id=a.get("model_id", ""))
    model, result = mental_model_apply_delta(model=model, operations=a.get("operations"), actor=by.label,
                                             expected_revision=a.get("expected_revision"), by=by)
    return {"changed": result.changed, "revision": model.revision, "applied": result.applied,
            "skipped": result.skipped}


def _delete_model(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    try:
        model = mental_model_get(bank=bank, model_id=a.get("model_id", ""))
    except NotFound:
        return {"deleted": False}
    return {"deleted": mental_model_delete(model=model, actor=by.label, by=by)}


def _agentos(fn: Callable[..., dict[str, Any]], *keys: str, required: tuple[str, ...] = (), checked: bool = False
             ) -> Callable[[Bank, Principal, dict[str, Any]], dict[str, Any]]:
    """``checked``: ``fn`` checks the caller's permission itself (it takes ``by``)."""
    def run(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
        for key in required:
            if a.get(key) in (None, "", []):
                raise InvalidInput("Field required", field=key)
        for key in ("traceId", "content", "type", "scope"):
            if a.get(key) is not None and not isinstance(a[key], str):
                raise InvalidInput("must be a string", field=key)
        if "traceIds" in a and not (isinstance(a["traceIds"], list) and all(isinstance(t, str) for t in a["traceIds"])):
            raise InvalidInput("must be a list of strings", field="traceIds")
        caller = {"by": by} if checked else {}
        return fn(bank=bank, actor=by.label, **caller, **{k: a[k] for k in (*required, *keys) if k in a})

    return run


def _search(bank: Bank, by: Principal, a: dict[str, Any]) -> dict[str, Any]:
    found = agent_memory_search(bank=bank, query=a.get("query", ""), type=a.get("type"), scope=a.get("scope"),
                                limit=a.get("limit") or 10)
    # What the search returned goes in those memories' access log, as a recall's hits do.
    usage_record_access([bank], [SimpleNamespace(bank_id=bank.bank_id, memory_id=r["id"])
                                 for r in found.get("results", [])], kind="search")
    return found


TOOLS: dict[str, Tool] = {t.name: t for t in [
    Tool("memory_retain", "write", _retain, "Store content in a bank (Astrocyte retain).", create_bank=True),
    Tool("memory_recall", "read", _recall, "Hybrid recall from a bank, with its trace."),
    Tool("memory_reflect", "read", _reflect, "With a query: answer from memory with sources. Without: run a "
                                             "consolidation pass (needs write)."),
    Tool("memory_forget", "forget", _forget, "Forget memories by id or tag."),
    Tool("memory_create_directive", "write", _directive, "Author a rule applied ahead of all recall.",
         create_bank=True),
    Tool("memory_list_observations", "read", _list_observations, "List observations, optionally by trend."),
    Tool("memory_get_observation", "read", _get_observation, "Get one observation."),
    Tool("memory_create_observation", "write", _create_observation, "Create an observation with evidence.",
         create_bank=True),
    Tool("memory_delete_observation", "forget", _delete_observation, "Delete an observation."),
    Tool("memory_list_mental_models", "read", _list_models, "List mental models."),
    Tool("memory_create_mental_model", "write", _create_model, "Create or replace a mental model.",
         create_bank=True),
    Tool("memory_update_mental_model", "write", _update_model, "Apply delta operations to a mental model."),
    Tool("memory_delete_mental_model", "forget", _delete_model, "Delete a mental model (soft)."),
    Tool("memory_add", "write", _agentos(agent_memory_add, "type", "scope", "tags", required=("content",), checked=True),
         "AgentOS: store a trace (type episodic|semantic|procedural|prospective).", create_bank=True),
    Tool("memory_update", "write", _agentos(agent_memory_update, "content", "tags", required=("traceId",), checked=True),
         "AgentOS: change a trace's content or tags."),
    Tool("memory_delete", "forget", _agentos(agent_memory_delete, required=("traceId",), checked=True), "AgentOS: soft-delete a trace."),
    Tool("memory_merge", "write", _agentos(agent_memory_merge, "content", required=("traceIds",), checked=True),
         "AgentOS: merge two or more traces into one."),
    Tool("memory_search", "read", _search, "AgentOS: full-text search with type/scope filters."),
    Tool("memory_history", "read", _history, "Recall as the bank was at a moment (as_of)."),
    Tool("memory_audit", "read", gateway.audit, "Coverage score and gaps of a bank for a scope."),
    Tool("memory_compile", "read", gateway.compile_bank, "Compile wiki pages per scope."),
    Tool("memory_graph_search", "read", gateway.search_graph, "Search the bank's entities."),
    Tool("memory_graph_neighbors", "read", gateway.graph_neighbours, "Memories linked to entities."),
    Tool("memory_refresh_mental_model", "write", gateway.refresh_model,
         "Add source ids (and optionally new content) to a mental model, as a new revision."),
    Tool("memory_lifecycle", "admin", gateway.run_lifecycle, "Run the bank's lifecycle policy now."),
    Tool("memory_bank_health", "admin", gateway.health_of_bank, "The bank's health from its real counts."),
    Tool("memory_hold_set", "admin", gateway.set_hold, "Place a legal hold: forget is refused until released.",
         create_bank=True),
    Tool("memory_hold_release", "admin", gateway.release_hold, "Release a legal hold."),
]}

# Tools about the caller or the server, not one bank.
BANKLESS: dict[str, tuple[Callable[[Principal, dict[str, Any]], dict[str, Any]], str]] = {
    "memory_banks": (gateway.list_banks, "The banks this token can see."),
    "memory_health": (gateway.health, "Whether the server and its database are healthy."),
}


# Tools that also read several banks at once (``banks``); each bank is resolved as REST resolves it.
MULTI_BANK: dict[str, Callable[[list[Bank], Principal, dict[str, Any]], dict[str, Any]]] = {
    "memory_recall": lambda banks, by, a: gateway.recall_banks(banks, a, _recall_filters(a), recall_options(a)),
    "memory_reflect": _reflect_banks,
}


def run_tool(principal: Principal, name: str, args: dict[str, Any]) -> dict[str, Any]:
    if name not in BANKLESS and name not in TOOLS:
        raise NotFound(f"unknown tool {name!r}")
    if not isinstance(args, dict):
        raise InvalidInput("arguments must be an object")
    if name in BANKLESS:
        return BANKLESS[name][0](principal, tool_arguments(name, args))
    tool = TOOLS[name]
    check_storable(args)
    args = tool_arguments(name, args)
    if name in MULTI_BANK and args.get("banks") and (name != "memory_reflect" or args.get("query")):
        banks = banks_to_read(principal, requested_bank_ids(args.get("bank_id"), args["banks"]))
        return MULTI_BANK[name](banks, principal, args)
    if name == "memory_bank_health" and args.get("bank_id") == gateway.ALL_BANKS:
        return gateway.health_of_all_banks(principal)
    permission = tool.permission
    if name == "memory_reflect" and not args.get("query"):
        permission = "write"
    bank = bank_for(principal, str(args.get("bank_id") or ""), permission, create=tool.create_bank,
                    empty_if_missing=not tool.create_bank)
    return tool.run(bank, principal, args)


__all__ = ["BANKLESS", "MULTI_BANK", "TOOLS", "Tool", "run_tool"]
