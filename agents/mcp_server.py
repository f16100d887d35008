"""The MCP server: Astrocyte's MCP tool names and the AgentOS tools over streamable HTTP.

Every request must carry the same bearer token as the REST API (``Authorization:
Bearer`` or ``X-Api-Key``); each tool checks the token's permission on the bank it
names, through the same ``run_tool`` the REST routes use.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
from collections.abc import AsyncIterator
from typing import Annotated, Any

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent
from pydantic import WithJsonSchema
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from agents.tool_args import ARGUMENTS
from agents.toolbox import BANKLESS, TOOLS, run_tool
from memoryhub.errors import (
    InvalidInput,
    MemoryHubError,
    ServiceUnavailable,
    database_error_as_domain_error,
    error_body,
)
from memoryhub.readers import reading_as

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


def _rate_wait(token_id: int | None) -> float | None:
    from banks.api.throttling import token_request_wait

    return token_request_wait(token_id) if token_id is not None else None


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
        with reading_as(principal.label, "mcp"):
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


async def call(ctx: Context, name: str, args: dict[str, Any]) -> dict[str, Any]:
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


def _register(name: str, description: str) -> None:
    """One MCP tool whose parameters are those of the tool's argument model (agents.tool_args), so MCP
    publishes and checks the same arguments as ``POST /v1/agent/<tool>``."""
    model = ARGUMENTS[name]

    async def tool(ctx: Context, **args: Any) -> dict[str, Any]:
        return await call(ctx, name, args)

    # Published with the model's own schema but taken as given: run_tool checks them against the model,
    # so a wrong type is answered with the same error (naming the field) as over REST.
    properties = model.model_json_schema()["properties"]
    parameters = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)]
    annotations: dict[str, Any] = {"ctx": Context, "return": dict[str, Any]}
    for field_name, field in model.model_fields.items():
        annotation = Annotated[Any, WithJsonSchema(properties[field_name])]
        default = inspect.Parameter.empty if field.is_required() else field.default
        parameters.append(inspect.Parameter(field_name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=annotation))
        annotations[field_name] = annotation
    tool.__signature__ = inspect.Signature(parameters, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    tool.__name__ = tool.__qualname__ = name
    server.add_tool(tool, name=name, description=description)


for _name, _tool in TOOLS.items():
    _register(_name, _tool.description)
for _name, (_, _description) in BANKLESS.items():
    _register(_name, _description)


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
            # Every MCP request counts against the token's one budget, shared with REST and the agent routes.
            wait = await sync_to_async(_rate_wait, thread_sensitive=True)(principal.token_id)
            if wait is not None:
                await JSONResponse(error_body(429, "rate_limited", f"Rate limit exceeded; retry in {math.ceil(wait)} s",
                                              retry_after=round(wait, 3)),
                                   status_code=429, headers={"Retry-After": str(math.ceil(wait))})(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_app() -> Starlette:
    mcp_app = server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_app.router.lifespan_context(mcp_app):
            yield

    return Starlette(routes=[Mount("/", app=RequireToken(mcp_app))], lifespan=lifespan)
