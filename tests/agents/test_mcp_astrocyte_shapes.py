"""Every MCP tool of Astrocyte 0.22 answers with at least the keys the real package's tool answers with.

The real ``astrocyte`` package runs offline here (in-memory stores, mock LLM) and its own MCP tool
functions are called with the same arguments as MemoryHub's tools over a real MCP session. Only
the MCP framework it registers its tools with (``fastmcp``, not a dependency of MemoryHub) is
replaced by a stand-in that keeps the decorated functions, so each tool's own body runs unchanged.
"""

from __future__ import annotations

import asyncio
import json
import sys
import types
from typing import Any

import pytest

from banks.services.memories import memory_retain
from tests.fakes import session_calls

A, B = "user-alice", "user-bob"

# (tool, arguments); "{mem}" / "{obs}" stand for a memory / observation id of the side being called.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_retain", {"content": "Alice likes jazz.", "bank_id": A, "tags": ["music"]}),
    ("memory_recall", {"query": "Alice Acme", "bank_id": A, "max_results": 5}),
    ("memory_reflect", {"query": "Where does Alice work?", "bank_id": A}),
    ("memory_history", {"query": "Acme", "bank_id": A, "as_of": "2100-01-01T00:00:00+00:00"}),
    ("memory_audit", {"scope": "work", "bank_id": A, "max_memories": 10}),
    ("memory_compile", {"bank_id": A}),
    ("memory_graph_search", {"query": "Alice", "bank_id": A, "limit": 5}),
    ("memory_graph_neighbors", {"entity_ids": ["nobody"], "bank_id": A, "max_depth": 1}),
    ("memory_create_mental_model", {"model_id": "m", "title": "Work", "content": "Alice works at Acme.",
                                    "bank_id": A}),
    ("memory_update_mental_model", {"model_id": "m", "bank_id": A,
                                    "operations": [{"op": "add_section", "heading": "Travel"}]}),
    ("memory_refresh_mental_model", {"model_id": "m", "new_source_ids": ["{mem}"], "bank_id": A}),
    ("memory_list_mental_models", {"bank_id": A}),
    ("memory_delete_mental_model", {"model_id": "m", "bank_id": A}),
    ("memory_create_directive", {"rule_text": "Answer briefly.", "bank_id": A}),
    ("memory_create_observation", {"text": "Alice travels for work.", "bank_id": A, "source_ids": ["{mem}"]}),
    ("memory_list_observations", {"bank_id": A}),
    ("memory_get_observation", {"observation_id": "{obs}", "bank_id": A}),
    ("memory_delete_observation", {"observation_id": "{obs}", "bank_id": A}),
    ("memory_banks", {}),
    ("memory_health", {}),
    ("memory_hold_set", {"bank_id": A, "hold_id": "case-1", "reason": "litigation"}),
    ("memory_hold_release", {"bank_id": A, "hold_id": "case-1"}),
    ("memory_forget", {"memory_ids": ["{mem}"], "bank_id": A}),
    ("memory_lifecycle", {"bank_id": A}),
    ("memory_bank_health", {"bank_id": A}),
]
MULTI_BANK = ("memory_recall", {"query": "Acme", "banks": [A, B], "strategy": "parallel"})


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str) and value in ("{mem}", "{obs}"):
        return ids[value]
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


def missing_keys(theirs: Any, ours: Any, path: str = "") -> list[str]:
    """Paths of keys Astrocyte's answer has and ours lacks, nested dicts and lists of dicts included."""
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [path or "."]
        out = [f"{path}.{k}" for k in theirs if k not in ours]
        for key in theirs:
            if key in ours:
                out += missing_keys(theirs[key], ours[key], f"{path}.{key}")
        return out
    if isinstance(theirs, list) and theirs and isinstance(theirs[0], dict):
        if not isinstance(ours, list):
            return [path]
        return missing_keys(theirs[0], ours[0], f"{path}[0]") if ours else []
    return []


def _registry() -> type:
    class ToolRegistry:
        """Stands in for FastMCP: keeps each decorated tool function, which then runs unchanged."""

        def __init__(self, name: str | None = None, instructions: str | None = None, **_: Any) -> None:
            self.tools: dict[str, Any] = {}

        def tool(self, *_: Any, **__: Any) -> Any:
            def keep(fn: Any) -> Any:
                self.tools[fn.__name__] = fn
                return fn

            return keep

    return ToolRegistry


@pytest.fixture
def astrocyte_tools(monkeypatch) -> dict[str, Any]:
    stand_in = types.ModuleType("fastmcp")
    stand_in.FastMCP = _registry()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fastmcp", stand_in)
    monkeypatch.delitem(sys.modules, "astrocyte.mcp", raising=False)
    from astrocyte import Astrocyte
    from astrocyte.mcp import create_mcp_server
    from astrocyte.testing.in_memory import InMemoryMentalModelStore, InMemoryWikiStore

    brain = Astrocyte.from_config_dict({
        "provider_tier": "storage", "vector_store": "in_memory", "graph_store": "in_memory", "llm_provider": "mock",
        "mcp": {"expose_forget": True, "expose_admin": True, "expose_reflect": True}})
    brain.set_mental_model_store(InMemoryMentalModelStore())
    brain.set_wiki_store(InMemoryWikiStore())
    return create_mcp_server(brain, brain.config).tools


def run_astrocyte(tools: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        answers: dict[str, Any] = {}
        ids: dict[str, str] = {}
        for text, bank in (("Alice Smith works at Acme in Lisbon.", A), ("Bob Jones works at Acme in Porto.", B)):
            stored = json.loads(await tools["memory_retain"](content=text, bank_id=bank))
            ids.setdefault("{mem}", stored["memory_id"])
        for name, args in [*CALLS, MULTI_BANK]:
            answer = json.loads(await tools[name](**_fill(args, ids)))
            answers[name if args is not MULTI_BANK[1] else "memory_recall (banks)"] = answer
            if name == "memory_create_observation":
                ids["{obs}"] = answer["observation"]["id"]
        return answers

    return asyncio.run(go())


def test_every_tool_answers_with_astrocytes_keys(mcp_url, make_bank, make_token, astrocyte_tools):
    theirs = run_astrocyte(astrocyte_tools)
    assert {n for n, _ in CALLS} == set(astrocyte_tools), "a tool of the real package is not compared"
    assert not {n: a["error"] for n, a in theirs.items() if "error" in a}, "the real package failed a call"

    alice, bob = make_bank(A), make_bank(B)
    mem = memory_retain(bank=alice, text="Alice Smith works at Acme in Lisbon.", actor="test").memory_id
    memory_retain(bank=bob, text="Bob Jones works at Acme in Porto.", actor="test")
    token = make_token({"user-*": ["read", "write", "forget", "admin"]})
    ids = {"{mem}": mem}
    ours: dict[str, Any] = {}
    # The observation id is only known once created: two sessions, split there.
    split = next(i for i, (n, _) in enumerate(CALLS) if n == "memory_get_observation")
    _, first = asyncio.run(session_calls(mcp_url, token, [(n, _fill(a, ids)) for n, a in CALLS[:split]]))
    ours.update(zip([n for n, _ in CALLS[:split]], first, strict=True))
    ids["{obs}"] = ours["memory_create_observation"]["observation"]["id"]
    rest = [*CALLS[split:], MULTI_BANK]
    _, second = asyncio.run(session_calls(mcp_url, token, [(n, _fill(a, ids)) for n, a in rest]))
    ours.update(zip([n for n, _ in CALLS[split:]] + ["memory_recall (banks)"], second, strict=True))
    assert not {n: a for n, a in ours.items() if a.get("isError")}, ours

    mismatches = {name: missing_keys(theirs[name], ours[name]) for name in theirs}
    assert {name: keys for name, keys in mismatches.items() if keys} == {}
    # The answers hold something to compare where it matters (not only empty lists).
    assert theirs["memory_recall"]["hits"] and ours["memory_recall"]["hits"]
    assert theirs["memory_list_observations"]["observations"] and ours["memory_list_observations"]["observations"]
    assert theirs["memory_list_mental_models"]["models"] and ours["memory_list_mental_models"]["models"]
    assert theirs["memory_reflect"]["sources"] and ours["memory_reflect"]["sources"]


def test_mcp_recall_takes_the_documented_options(mcp_url, make_bank, make_token):
    alice = make_bank(A)
    memory_retain(bank=alice, text="Alice drank oat milk coffee in Lisbon. She was late.", actor="test",
                  memory_layer="episodic")
    memory_retain(bank=alice, text="Alice prefers oat milk.", actor="test", memory_layer="semantic")
    token = make_token({A: ["read"]})
    _, (answer,) = asyncio.run(session_calls(mcp_url, token, [("memory_recall", {
        "query": "oat milk coffee", "bank_id": A, "session_id": "s-1", "detail_level": "titles",
        "layer_weights": {"semantic": 1000.0, "episodic": 0.8},
        "external_context": [{"text": "The office orders oat milk weekly.", "score": 0.5}]})]))
    assert not answer.get("isError"), answer
    assert answer["hits"][0]["text"] == "Alice prefers oat milk."
    assert "Alice drank oat milk coffee in Lisbon." in [h["text"] for h in answer["hits"]]
    assert "The office orders oat milk weekly." in [h["text"] for h in answer["hits"]]
    assert answer["trace"]["detail_level"] == "titles" and answer["trace"]["external_context_count"] == 1


def test_a_failed_tool_answers_with_astrocytes_failure_keys(mcp_url, make_bank, make_token, monkeypatch):
    """Refused on every bank (Astrocyte: access control on, default deny; MemoryHub: a token granted
    another bank), each tool's error answer carries the keys of the real tool's failure answer."""
    stand_in = types.ModuleType("fastmcp")
    stand_in.FastMCP = _registry()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fastmcp", stand_in)
    monkeypatch.delitem(sys.modules, "astrocyte.mcp", raising=False)
    from astrocyte import Astrocyte
    from astrocyte.mcp import create_mcp_server
    from astrocyte.testing.in_memory import InMemoryMentalModelStore, InMemoryWikiStore

    brain = Astrocyte.from_config_dict({
        "provider_tier": "storage", "vector_store": "in_memory", "graph_store": "in_memory", "llm_provider": "mock",
        "access_control": {"enabled": True, "default_policy": "deny"},
        "mcp": {"expose_forget": True, "expose_admin": True, "expose_reflect": True}})
    brain.set_mental_model_store(InMemoryMentalModelStore())
    brain.set_wiki_store(InMemoryWikiStore())
    tools = create_mcp_server(brain, brain.config).tools
    ids = {"{mem}": "0123456789abcdef", "{obs}": "0123456789abcdef"}

    async def theirs_all() -> dict[str, Any]:
        return {n: json.loads(await tools[n](**_fill(a, ids))) for n, a in CALLS}

    theirs = {n: a for n, a in asyncio.run(theirs_all()).items() if "error" in a}
    assert len(theirs) >= 18, sorted(theirs)  # the tools that check access there

    make_bank(A)
    make_bank("elsewhere")
    token = make_token({"elsewhere": ["read", "write", "forget", "admin"]})
    calls = [(n, _fill(a, ids)) for n, a in CALLS if n in theirs]
    _, results = asyncio.run(session_calls(mcp_url, token, calls))
    ours = dict(zip([n for n, _ in calls], results, strict=True))
    assert all(a.get("isError") and a["error"] == "AccessDenied" for a in ours.values()), ours
    assert {n: sorted(set(theirs[n]) - set(ours[n])) for n in theirs if set(theirs[n]) - set(ours[n])} == {}
    assert ours["memory_refresh_mental_model"]["model_id"] == "m" and ours["memory_recall"]["hits"] == []



NEVER = "user-never-written"


def _hits_from_a_only(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert [h["bank_id"] for h in ours[-1]["hits"]] == [A], ours[-1]
    assert [h["bank_id"] for h in theirs[-1]["hits"]] == [A]


def _sources_of_a(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert ours[-1]["sources"] and {s["bank_id"] for s in ours[-1]["sources"]} == {A}
    assert {s["bank_id"] for s in theirs[-1]["sources"]} == {A}


def _no_sources(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert "sources" not in theirs[-1]
    assert not ours[-1].get("sources") and ours[-1]["answer"]


def _every_bank(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert [b["bank_id"] for b in ours[-1]["banks"]] == [A] and A in [b["bank_id"] for b in theirs[-1]["banks"]]
    assert all(isinstance(v, float) for v in ours[-1]["banks"][0]["metrics"].values())


def _numbers(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert all(isinstance(v, float) for v in theirs[-1]["metrics"].values())
    assert all(isinstance(v, float) for v in ours[-1]["metrics"].values()), ours[-1]["metrics"]


def _content_kept(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    from banks.models import MentalModel

    model = MentalModel.objects.get(model_id="plain")
    assert (model.content, model.source_ids, model.revision) == ("plain text", ["m1", "m2"], 2)
    assert ours[-1] == {"model_id": "plain", "revision": 2, "source_count": 2}


def _hold_replaced(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    from banks.models import LegalHold

    assert theirs[-1]["reason"] == "litigation"
    assert ours[-1]["reason"] == "litigation" and ours[-1]["set_at"] > ours[0]["set_at"]
    assert list(LegalHold.objects.active().values_list("reason", flat=True)) == ["litigation"]


def _locked(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    # The package's tool reports a failure as {"deleted_count": 0, "error": <exception name>}.
    assert theirs[-1]["error"] == "LegalHoldActive" and theirs[-1]["deleted_count"] == 0
    assert ours[-1]["isError"] and ours[-1]["status"] == 423 and ours[-1]["error"] == "LegalHoldActive"
    assert ours[-1]["deleted_count"] == 0


def _memory_first(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    assert theirs[-1]["hits"][0]["text"] == "Alice Smith works at Acme in Lisbon."
    assert ours[-1]["hits"][0]["text"] == "Alice Smith works at Acme in Lisbon."
    assert all(h.get("layer") != "directive" for h in ours[-1]["hits"])


HOLD = ("memory_hold_set", {"bank_id": A, "hold_id": "case-1", "reason": "audit"})
# Banks a case configures (as an operator would with PATCH /v1/banks/<id>).
BANK_CONFIG = {"recall on a bank that keeps directives out of hits": {"recall": {"include_directives": False}}}
# Calls an Astrocyte client makes that MemoryHub once refused or answered differently: the calls, and
# what the answer to the last one must show (beside carrying every key the package's answer has).
CLIENT_CASES: dict[str, tuple[list[tuple[str, dict[str, Any]]], Any]] = {
    "recall parallel, one bank never written": (
        [("memory_recall", {"query": "Acme Lisbon", "banks": [A, NEVER], "strategy": "parallel"})], _hits_from_a_only),
    "recall cascade, one bank never written": (
        [("memory_recall", {"query": "Acme Lisbon", "banks": [NEVER, A], "strategy": "cascade"})], _hits_from_a_only),
    "refresh a plain-text model by source ids": (
        [("memory_create_mental_model", {"model_id": "plain", "title": "Plain", "content": "plain text",
                                         "bank_id": A}),
         ("memory_refresh_mental_model", {"model_id": "plain", "new_source_ids": ["m1", "m2"], "bank_id": A})],
        _content_kept),
    "reflect over banks": (
        [("memory_reflect", {"query": "Where does Alice work?", "banks": [A, NEVER], "strategy": "parallel"})],
        _sources_of_a),
    "reflect without sources": (
        [("memory_reflect", {"query": "Where does Alice work?", "bank_id": A, "include_sources": False})],
        _no_sources),
    "health of a bank never written": ([("memory_bank_health", {"bank_id": NEVER})], _numbers),
    "health of every bank": ([("memory_bank_health", {"bank_id": "__all__"})], _every_bank),
    "the same hold id, a new reason": (
        [HOLD, ("memory_hold_set", {"bank_id": A, "hold_id": "case-1", "reason": "litigation"})], _hold_replaced),
    "forget on a held bank": ([HOLD, ("memory_forget", {"bank_id": A, "memory_ids": ["0123456789abcdef"]})],
                              _locked),
    "recall on a bank that keeps directives out of hits": (
        [("memory_create_directive", {"rule_text": "Answer briefly.", "bank_id": A}),
         ("memory_recall", {"query": "Where does Alice work? Acme Lisbon", "bank_id": A, "max_results": 1})],
        _memory_first),
}


@pytest.mark.parametrize("case", list(CLIENT_CASES))
def test_calls_astrocyte_clients_make_answer_as_the_package_does(case, mcp_url, make_bank, make_token,
                                                                  astrocyte_tools):
    from banks.models import Bank

    calls, check = CLIENT_CASES[case]

    async def theirs_all() -> list[dict[str, Any]]:
        await astrocyte_tools["memory_retain"](content="Alice Smith works at Acme in Lisbon.", bank_id=A)
        await astrocyte_tools["memory_recall"](query="Acme", bank_id=A)  # so its health counters know the bank
        return [json.loads(await astrocyte_tools[tool](**args)) for tool, args in calls]

    theirs = asyncio.run(theirs_all())

    memory_retain(bank=make_bank(A, config=BANK_CONFIG.get(case)), text="Alice Smith works at Acme in Lisbon.",
                  actor="test")
    token = make_token({"user-*": ["read", "write", "forget", "admin"]})
    _, ours = asyncio.run(session_calls(mcp_url, token, calls))
    if check is not _locked:
        assert not [a for a in theirs if "error" in a], theirs
        assert not [a for a in ours if a.get("isError")], ours
    assert missing_keys(theirs[-1], ours[-1]) == []
    check(ours, theirs)
    assert not Bank.objects.filter(bank_id=NEVER).exists()  # reading a bank nobody wrote to creates nothing
