"""The six AgentOS memory tools, on MemoryHub's services.

AgentOS "types" are Tulving's memory kinds; they become the memory layer, and map
to a fact_type (episodic → experience, the rest → world). The "scope" is kept in
metadata. Trace ids are memory ids.
"""

from __future__ import annotations

import time
from typing import Any

from banks.access import Principal
from banks.models import Bank, Memory
from banks.selectors.recall import RecallFilters, _keyword
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.memory_edit import memory_update
from banks.services.merge import memory_merge
from memoryhub.errors import InvalidInput

TYPES = {"episodic": "experience", "semantic": "world", "procedural": "world", "prospective": "world"}
SCOPES = ("thread", "user", "persona", "organization")


def _type(value: str | None) -> str:
    value = (value or "episodic").strip().lower()
    if value not in TYPES:
        raise InvalidInput(f"must be one of {', '.join(TYPES)}", field="type")
    return value


def agent_memory_add(*, bank: Bank, actor: str, content: str, type: str | None = None, scope: str | None = None,
                     tags: list[str] | None = None, by: Principal | None = None) -> dict[str, Any]:
    kind = _type(type)
    scope = (scope or "user").strip() or "user"
    outcome = memory_retain(bank=bank, text=content, actor=actor, tags=tags, fact_type=TYPES[kind],
                            memory_layer=kind, metadata={"scope": scope}, source="agent:memory_add",
                            near_dedup=False, author=actor, by=by)
    # SHA-256 dedup: identical content answers with the id already stored.
    return {"traceId": outcome.memory_id, "deduplicated": outcome.deduplicated}


def _live(bank: Bank, trace_id: str) -> Memory | None:
    return Memory.objects.live().filter(bank=bank, memory_id=trace_id).first()


def agent_memory_update(*, bank: Bank, actor: str, traceId: str, content: str | None = None,  # noqa: N803
                        tags: list[str] | None = None, by: Principal | None = None) -> dict[str, Any]:
    memory = _live(bank, traceId)
    if memory is None:
        return {"updated": False}
    memory_update(memory=memory, actor=actor, text=content, tags=tags, reason="agent:memory_update", by=by)
    return {"updated": True}


def agent_memory_delete(*, bank: Bank, actor: str, traceId: str,  # noqa: N803
                        by: Principal | None = None) -> dict[str, Any]:
    if _live(bank, traceId) is None:
        return {"deleted": False}
    # A soft delete: out of search, kept as a tombstone for audit and history.
    outcome = memory_forget(bank=bank, actor=actor, memory_ids=[traceId], reason="agent:memory_delete",
                            by=by)
    return {"deleted": outcome.deleted_count == 1}


def agent_memory_merge(*, bank: Bank, actor: str, traceIds: list[str], content: str | None = None,  # noqa: N803
                       by: Principal | None = None) -> dict[str, Any]:
    if not isinstance(traceIds, list) or len(set(traceIds)) < 2:
        raise InvalidInput("give at least two trace ids", field="traceIds")
    if content is None:
        texts = list(Memory.objects.live().filter(bank=bank, memory_id__in=traceIds).values_list("memory_id", "text"))
        order = {m: i for i, m in enumerate(traceIds)}
        content = " ".join(t for _, t in sorted(texts, key=lambda r: order.get(r[0], 0)))
    survivor = memory_merge(bank=bank, memory_ids=traceIds, actor=actor, text=content, reason="agent:memory_merge",
                            by=by)
    return {"mergedTraceId": survivor.memory_id, "sourcesDeleted": len(set(traceIds)) - 1}


def agent_memory_search(*, bank: Bank, query: str, type: str | None = None, scope: str | None = None,
                        limit: int = 10) -> dict[str, Any]:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("Field required", field="query")
    limit = max(1, min(int(limit or 10), 100))
    filters = RecallFilters(layers=[_type(type)] if type else None)
    # Over-fetch when a scope filter will drop some rows afterwards.
    rows = _keyword(bank, query, filters, limit * (5 if scope else 1))
    by_pk = Memory.objects.filter(bank=bank).defer("embedding", "search_vector").in_bulk([pk for pk, _ in rows])
    top = max((rank for _, rank in rows), default=0.0) or 1.0
    results = []
    for pk, rank in rows:
        memory = by_pk.get(pk)
        if memory is None or (scope and (memory.metadata or {}).get("scope", "user") != scope):
            continue
        results.append({"id": memory.memory_id, "content": memory.text, "type": memory.memory_layer or "semantic",
                        "scope": (memory.metadata or {}).get("scope", "user"), "strength": round(rank / top, 4),
                        "tags": list(memory.tags)})
        if len(results) >= limit:
            break
    return {"results": results}


def timed(fn, **kwargs: Any) -> tuple[Any, int]:  # noqa: ANN001
    started = time.perf_counter()
    value = fn(**kwargs)
    return value, int((time.perf_counter() - started) * 1000)
