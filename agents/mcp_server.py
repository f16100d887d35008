"""The MCP server: Astrocyte's MCP tool names and the AgentOS tools over streamable HTTP.

Every request must carry the same bearer token as the REST API (``Authorization:
Bearer`` or ``X-Api-Key``); each tool checks the token's permission on the bank it
names, through the same ``run_tool`` the REST routes use.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from agents.toolbox import BANKLESS, TOOLS, run_tool
from memoryhub.errors import (
    InvalidInput,
    MemoryHubError,
    ServiceUnavailable,
    database_error_as_domain_error,
    error_body,
)

server = MCPServer(name="memoryhub", instructions="Long-term memory banks: retain, recall, reflect, forget, "
                   "observations, mental models and directives; plus the AgentOS memory tools.")


def _principal_sync(raw: str):  # noqa: ANN202
    from django.db import close_old_connections

    from banks.access import principal_for_token
    from banks.api.auth import token_lookup

    close_old_connections()
    token = token_lookup(raw) if raw else None
    if token is None or token.revoked_at is not None:
        return None
    from django.utils import timezone

    if token.expires_at is not None and token.expires_at <= timezone.now():
        return None
    return principal_for_token(token)


def _raw_token(headers: Any) -> str:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return headers.get("x-api-key", "").strip()


class ToolFailed(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("detail", ""))
        self.error = error


def _call_sync(raw: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        principal = _principal_sync(raw)
        if principal is None:
            raise ToolFailed({"error": "AuthenticationFailed", "detail": "Invalid or revoked token", "status": 401})
        return run_tool(principal, name, {k: v for k, v in args.items() if v is not None})
    except MemoryHubError as exc:
        name = "InvalidInput" if isinstance(exc, InvalidInput) else type(exc).__name__
        raise ToolFailed({"error": name, "detail": exc.message, "status": exc.status, **exc.extra}) from None
    except Exception as exc:
        answer = database_error_as_domain_error(exc)
        if answer is None:
            raise
        raise ToolFailed({"error": type(answer).__name__, "detail": answer.message, "status": answer.status,
                          **answer.extra}) from None


# What each of Astrocyte's tools answers beside "error" when it fails (its empty result), so a client
# that reads, say, result["hits"] after a failure finds it here too.
FAILED_ANSWERS: dict[str, dict[str, Any]] = {
    "memory_retain": {"stored": False}, "memory_recall": {"hits": [], "total_available": 0},
    "memory_reflect": {"answer": ""}, "memory_forget": {"deleted_count": 0}, "memory_history": {"hits": []},
    "memory_audit": {"gaps": [], "coverage_score": 0.0}, "memory_compile": {"pages_created": 0, "pages_updated": 0},
    "memory_graph_search": {"entities": []}, "memory_graph_neighbors": {"hits": []},
    "memory_lifecycle": {"archived_count": 0, "deleted_count": 0}, "memory_bank_health": {"score": 0.0},
    "memory_hold_release": {"released": False}, "memory_list_mental_models": {"models": []},
    "memory_create_mental_model": {"model_id": None}, "memory_update_mental_model": {"changed": False},
    "memory_delete_mental_model": {"deleted": False}, "memory_refresh_mental_model": {"model_id": None},
    "memory_create_directive": {"model_id": None}, "memory_list_observations": {"observations": []},
    "memory_get_observation": {"observation": None}, "memory_create_observation": {"observation": None},
    "memory_delete_observation": {"deleted": False},
}


async def call(ctx: Context, name: str, **args: Any) -> dict[str, Any]:
    request = ctx.request_context.request
    headers = request.headers if request is not None else {}
    try:
        return await sync_to_async(_call_sync, thread_sensitive=True)(_raw_token(headers), name, args)
    except ToolFailed as failed:
        # An error result (isError: true) whose text is the JSON object Astrocyte's tools answer with
        # (their empty result and {"error": <exception name>}), plus "detail" and "status".
        answer = {**FAILED_ANSWERS.get(name, {}), **failed.error}
        if name == "memory_refresh_mental_model":
            answer["model_id"] = args.get("model_id")
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(answer))],  # type: ignore[return-value]
                              is_error=True)


@server.tool(description=TOOLS["memory_retain"].description)
async def memory_retain(ctx: Context, content: str, bank_id: str, tags: list[str] | None = None,
                        metadata: dict[str, Any] | None = None, occurred_at: str | None = None,
                        source: str | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_retain", content=content, bank_id=bank_id, tags=tags, metadata=metadata,
                      occurred_at=occurred_at, source=source)


@server.tool(description=TOOLS["memory_recall"].description)
async def memory_recall(ctx: Context, query: str, bank_id: str | None = None, banks: list[str] | None = None,
                        strategy: str | None = None, max_results: int = 10, tags: list[str] | None = None,
                        fact_types: list[str] | None = None, as_of: str | None = None,
                        max_tokens: int | None = None, session_id: str | None = None,
                        layer_weights: dict[str, float] | None = None, detail_level: str | None = None,
                        external_context: list[dict[str, Any] | str] | None = None) -> dict[str, Any]:
    # session_id is accepted as Astrocyte's tool does; MemoryHub has no per-session scoping of recall.
    return await call(ctx, "memory_recall", query=query, bank_id=bank_id, banks=banks, strategy=strategy,
                      max_results=max_results, tags=tags, fact_types=fact_types, as_of=as_of, max_tokens=max_tokens,
                      layer_weights=layer_weights, detail_level=detail_level, external_context=external_context)


@server.tool(description=TOOLS["memory_reflect"].description)
async def memory_reflect(ctx: Context, bank_id: str, query: str | None = None, topic: str | None = None,
                         max_tokens: int | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_reflect", bank_id=bank_id, query=query, topic=topic, max_tokens=max_tokens)


@server.tool(description=TOOLS["memory_forget"].description)
async def memory_forget(ctx: Context, bank_id: str, memory_ids: list[str] | None = None,
                        tags: list[str] | None = None, reason: str | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_forget", bank_id=bank_id, memory_ids=memory_ids, tags=tags, reason=reason)


@server.tool(description=TOOLS["memory_create_directive"].description)
async def memory_create_directive(ctx: Context, rule_text: str, bank_id: str, directive_id: str | None = None,
                                  scope: str = "bank") -> dict[str, Any]:
    return await call(ctx, "memory_create_directive", rule_text=rule_text, bank_id=bank_id,
                      directive_id=directive_id, scope=scope)


@server.tool(description=TOOLS["memory_list_observations"].description)
async def memory_list_observations(ctx: Context, bank_id: str, scope: str | None = None, trend: str | None = None,
                                   limit: int = 100) -> dict[str, Any]:
    return await call(ctx, "memory_list_observations", bank_id=bank_id, scope=scope, trend=trend, limit=limit)


@server.tool(description=TOOLS["memory_get_observation"].description)
async def memory_get_observation(ctx: Context, observation_id: str, bank_id: str) -> dict[str, Any]:
    return await call(ctx, "memory_get_observation", observation_id=observation_id, bank_id=bank_id)


@server.tool(description=TOOLS["memory_create_observation"].description)
async def memory_create_observation(ctx: Context, text: str, bank_id: str, source_ids: list[str] | None = None,
                                    scope: str | None = None, confidence: float = 0.9,
                                    evidence: list[str] | None = None) -> dict[str, Any]:
    # ``evidence`` is the seed documentation's name for ``source_ids``.
    return await call(ctx, "memory_create_observation", text=text, bank_id=bank_id, source_ids=source_ids,
                      scope=scope, confidence=confidence, evidence=evidence)


@server.tool(description=TOOLS["memory_delete_observation"].description)
async def memory_delete_observation(ctx: Context, observation_id: str, bank_id: str) -> dict[str, Any]:
    return await call(ctx, "memory_delete_observation", observation_id=observation_id, bank_id=bank_id)


@server.tool(description=TOOLS["memory_list_mental_models"].description)
async def memory_list_mental_models(ctx: Context, bank_id: str, scope: str | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_list_mental_models", bank_id=bank_id, scope=scope)


@server.tool(description=TOOLS["memory_create_mental_model"].description)
async def memory_create_mental_model(ctx: Context, bank_id: str, model_id: str | None = None, title: str | None = None,
                                     content: str | None = None, sections: list[dict[str, Any]] | None = None,
                                     scope: str = "bank", source_ids: list[str] | None = None,
                                     name: str | None = None) -> dict[str, Any]:
    # The seed documentation creates by ``name`` (the title) without an id; both shapes work.
    return await call(ctx, "memory_create_mental_model", model_id=model_id, title=title or name, bank_id=bank_id,
                      content=content, sections=sections, scope=scope, source_ids=source_ids)


@server.tool(description=TOOLS["memory_update_mental_model"].description)
async def memory_update_mental_model(ctx: Context, model_id: str, operations: list[dict[str, Any]], bank_id: str,
                                     expected_revision: int | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_update_mental_model", model_id=model_id, operations=operations, bank_id=bank_id,
                      expected_revision=expected_revision)


@server.tool(description=TOOLS["memory_delete_mental_model"].description)
async def memory_delete_mental_model(ctx: Context, model_id: str, bank_id: str) -> dict[str, Any]:
    return await call(ctx, "memory_delete_mental_model", model_id=model_id, bank_id=bank_id)


@server.tool(description=TOOLS["memory_add"].description)
async def memory_add(ctx: Context, content: str, bank_id: str, type: str = "episodic", scope: str = "user",
                     tags: list[str] | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_add", content=content, bank_id=bank_id, type=type, scope=scope, tags=tags)


@server.tool(description=TOOLS["memory_update"].description)
async def memory_update(ctx: Context, traceId: str, bank_id: str, content: str | None = None,  # noqa: N803
                        tags: list[str] | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_update", traceId=traceId, bank_id=bank_id, content=content, tags=tags)


@server.tool(description=TOOLS["memory_delete"].description)
async def memory_delete(ctx: Context, traceId: str, bank_id: str) -> dict[str, Any]:  # noqa: N803
    return await call(ctx, "memory_delete", traceId=traceId, bank_id=bank_id)


@server.tool(description=TOOLS["memory_merge"].description)
async def memory_merge(ctx: Context, traceIds: list[str], bank_id: str,  # noqa: N803
                       content: str | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_merge", traceIds=traceIds, bank_id=bank_id, content=content)


@server.tool(description=TOOLS["memory_search"].description)
async def memory_search(ctx: Context, query: str, bank_id: str, type: str | None = None, scope: str | None = None,
                        limit: int = 10) -> dict[str, Any]:
    return await call(ctx, "memory_search", query=query, bank_id=bank_id, type=type, scope=scope, limit=limit)


@server.tool(description=TOOLS["memory_history"].description)
async def memory_history(ctx: Context, query: str, bank_id: str, as_of: str, max_results: int = 10,
                         tags: list[str] | None = None, max_tokens: int | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_history", query=query, bank_id=bank_id, as_of=as_of, max_results=max_results,
                      tags=tags, max_tokens=max_tokens)


@server.tool(description=TOOLS["memory_audit"].description)
async def memory_audit(ctx: Context, scope: str, bank_id: str, max_memories: int = 50, max_tokens: int | None = None,
                       tags: list[str] | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_audit", scope=scope, bank_id=bank_id, max_memories=max_memories,
                      max_tokens=max_tokens, tags=tags)


@server.tool(description=TOOLS["memory_compile"].description)
async def memory_compile(ctx: Context, bank_id: str, scope: str | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_compile", bank_id=bank_id, scope=scope)


@server.tool(description=TOOLS["memory_graph_search"].description)
async def memory_graph_search(ctx: Context, query: str, bank_id: str, limit: int = 10) -> dict[str, Any]:
    return await call(ctx, "memory_graph_search", query=query, bank_id=bank_id, limit=limit)


@server.tool(description=TOOLS["memory_graph_neighbors"].description)
async def memory_graph_neighbors(ctx: Context, entity_ids: list[str], bank_id: str, max_depth: int = 2,
                                 limit: int = 20) -> dict[str, Any]:
    return await call(ctx, "memory_graph_neighbors", entity_ids=entity_ids, bank_id=bank_id, max_depth=max_depth,
                      limit=limit)


@server.tool(description=TOOLS["memory_refresh_mental_model"].description)
async def memory_refresh_mental_model(ctx: Context, model_id: str, new_source_ids: list[str], bank_id: str,
                                      content: str | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_refresh_mental_model", model_id=model_id, new_source_ids=new_source_ids,
                      bank_id=bank_id, content=content)


@server.tool(description=BANKLESS["memory_banks"][1])
async def memory_banks(ctx: Context) -> dict[str, Any]:
    return await call(ctx, "memory_banks")


@server.tool(description=BANKLESS["memory_health"][1])
async def memory_health(ctx: Context) -> dict[str, Any]:
    return await call(ctx, "memory_health")


@server.tool(description=TOOLS["memory_lifecycle"].description)
async def memory_lifecycle(ctx: Context, bank_id: str) -> dict[str, Any]:
    return await call(ctx, "memory_lifecycle", bank_id=bank_id)


@server.tool(description=TOOLS["memory_bank_health"].description)
async def memory_bank_health(ctx: Context, bank_id: str) -> dict[str, Any]:
    return await call(ctx, "memory_bank_health", bank_id=bank_id)


@server.tool(description=TOOLS["memory_hold_set"].description)
async def memory_hold_set(ctx: Context, bank_id: str, hold_id: str, reason: str,
                          set_by: str | None = None) -> dict[str, Any]:
    return await call(ctx, "memory_hold_set", bank_id=bank_id, hold_id=hold_id, reason=reason, set_by=set_by)


@server.tool(description=TOOLS["memory_hold_release"].description)
async def memory_hold_release(ctx: Context, bank_id: str, hold_id: str) -> dict[str, Any]:
    return await call(ctx, "memory_hold_release", bank_id=bank_id, hold_id=hold_id)


class RequireToken:
    """Answer 401 before the MCP machinery runs when a request has no valid token."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = _raw_token(Request(scope).headers)
            try:
                principal = await sync_to_async(_principal_sync, thread_sensitive=True)(raw)
            except Exception as exc:
                # The token is looked up in the database: if it cannot be reached, say so (503).
                answer = database_error_as_domain_error(exc)
                if not isinstance(answer, ServiceUnavailable):
                    raise
                body = error_body(503, answer.code, answer.message, **answer.extra)
                await JSONResponse(body, status_code=503, headers={"Retry-After": str(answer.retry_after)})(
                    scope, receive, send)
                return
            if principal is None:
                body = error_body(401, "unauthenticated", "Bearer token or X-Api-Key required" if not raw
                                  else "Invalid or revoked token")
                await JSONResponse(body, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_app() -> Starlette:
    mcp_app = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_app.router.lifespan_context(mcp_app):
            yield

    return Starlette(routes=[Mount("/", app=RequireToken(mcp_app))], lifespan=lifespan)
