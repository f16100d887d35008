"""REST for agents: every tool at /v1/agent/<tool>, and auto-ingest of a conversation turn."""

from __future__ import annotations

import uuid

from pydantic import ConfigDict, Field
from rest_framework.request import Request
from rest_framework.response import Response

from agents.toolbox import BANKLESS, TOOLS, run_tool
from banks.api.base import BankApiView, ok
from banks.api.wire import NOT_BLANK, WireModel, one_required
from memoryhub.errors import InvalidInput, NotFound
from memoryhub.queue import enqueue_after_commit


class ToolApi(BankApiView):
    def post(self, request: Request, name: str) -> Response:
        if name not in TOOLS and name not in BANKLESS:
            raise NotFound(f"unknown tool {name!r}; tools: {', '.join(sorted([*TOOLS, *BANKLESS]))}")
        if not isinstance(request.data, dict):
            raise InvalidInput("the request body must be a JSON object")
        return ok(run_tool(self.principal(request), name, dict(request.data)))


class ToolListApi(BankApiView):
    def get(self, request: Request) -> Response:
        self.principal(request).require_some_read()
        return ok({"tools": [{"name": t.name, "permission": t.permission, "description": t.description}
                             for t in TOOLS.values()]
                   + [{"name": name, "permission": None, "description": description}
                      for name, (_, description) in BANKLESS.items()]})


class IngestTurnRequest(WireModel):
    model_config = ConfigDict(json_schema_extra=one_required(user=NOT_BLANK, assistant=NOT_BLANK))

    bank_id: str
    user: str = ""
    assistant: str = ""
    # The conversation the turn belongs to: the facts kept from it join that session, and are indexed
    # with the session's turns before them as context (see docs/api.md, context_turns).
    session_id: str = Field("", max_length=255)


class IngestTurnApi(BankApiView):
    def post(self, request: Request) -> Response:
        body = self.body(request, IngestTurnRequest)
        if not body.user.strip() and not body.assistant.strip():
            raise InvalidInput("give the user and/or assistant message of the turn", field="user")
        bank = self.bank(request, body.bank_id, "write", create=True)
        turn_id = uuid.uuid4().hex
        from agents.tasks import ingest_turn_task

        # Queued after commit; the caller never waits for extraction or embedding, and hears a 503
        # (nothing stored) when the broker cannot take the turn.
        enqueue_after_commit(lambda: ingest_turn_task.delay(bank.pk, body.user, body.assistant,
                                                            self.actor(request), turn_id,
                                                            session_id=body.session_id), what="the turn")
        return ok({"queued": True, "turn_id": turn_id, "bank_id": bank.bank_id}, status=202)
