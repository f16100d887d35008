"""The whole API's OpenAPI document: banks' /v1 operations (banks.api.openapi) and those of the apps
built on it, portability's archive and job routes and the agent tools.

It lives in the composition root because it is the one place that knows every app: banks describes its
own operations and nothing above it, the other apps' views are imported here. Settings name
``ApiSchema`` and ``whole_api_components`` (REST_FRAMEWORK, SPECTACULAR_SETTINGS)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from banks.api import responses as out
from banks.api import responses_resources as res
from banks.api.openapi import (
    ACCEPTED_RESPONSES,
    OPERATIONS,
    RESPONSES,
    PydanticAutoSchema,
    add_pydantic_components,
    register,
)

RESPONSES.update({
    ("ExportApi", "post"): out.ExportResult, ("ImportApi", "post"): out.ImportResult,
    ("JobApi", "get"): res.Job, ("JobCancelApi", "post"): res.Job, ("ToolListApi", "get"): res.ToolList,
})
ACCEPTED_RESPONSES.update({
    ("IngestTurnApi", "post"): res.TurnQueued, ("JobResumeApi", "post"): res.Job, ("ExportApi", "post"): res.Job,
    ("ImportApi", "post"): res.Job, ("ReextractEntitiesApi", "post"): res.Job,
})


class ToolArguments(BaseModel):
    """A tool's arguments: each tool names its own (``GET /v1/agent/tools``); most take ``bank_id``."""

    model_config = ConfigDict(extra="allow", title="ToolArguments")


# The views are imported when the first operation is described, not with this module: DRF loads the
# schema class while those views' modules are still being imported.
def _portability_operations() -> None:
    from portability.api import views as portability

    OPERATIONS.update({
        ("ExportApi", "post"): (portability.ExportRequest, None, "admin", "Export a bank to an archive file"),
        ("ImportApi", "post"): (portability.ImportRequest, None, "admin", "Import an archive file into a bank"),
        ("JobApi", "get"): (None, portability.JobQuery, "read", "A job's state, progress and counts"),
        ("JobCancelApi", "post"): (portability.JobQuery, None, "admin", "Ask a running job to stop"),
        ("JobResumeApi", "post"): (portability.JobQuery, None, "admin",
                                   "Continue a failed import or re-extraction after its last committed batch (202)"),
        ("ReextractEntitiesApi", "post"): (portability.ReextractRequest, None, "admin",
                                           "Re-extract every memory's entities with the bank's provider, "
                                           "as a resumable job (202)"),
    })


def _agent_operations() -> None:
    from agents.api import views as agents

    OPERATIONS.update({
        ("ToolListApi", "get"): (None, None, "read", "The agent tools and the permission each needs"),
        ("ToolApi", "post"): (ToolArguments, None, "the tool's own",
                              "Run one agent tool (memory_add, memory_recall, ...) with its arguments"),
        ("IngestTurnApi", "post"): (agents.IngestTurnRequest, None, "write",
                                    "Queue a conversation turn for extraction into the bank"),
    })


def _tool_names() -> list[str]:
    from agents.toolbox import BANKLESS, TOOLS

    return sorted([*TOOLS, *BANKLESS])


class ApiSchema(PydanticAutoSchema):
    def operations_load(self) -> None:
        _portability_operations()
        super().operations_load()
        _agent_operations()

    def get_operation(self, path: str, path_regex: str, path_prefix: str, method: str,
                      registry: Any) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is not None and (type(self.view).__name__, method.lower()) == ("ToolApi", "post"):
            for parameter in operation["parameters"]:
                if parameter.get("name") == "name":
                    parameter["schema"] = {"type": "string", "enum": _tool_names()}
        return operation


def _agent_tool_paths(result: dict[str, Any]) -> None:
    """``POST /v1/agent/{name}`` as one operation per tool, each with its own argument model as the
    body, so a client (and the fuzzer) knows every tool's arguments."""
    from agents.tool_args import ARGUMENTS, schema_name
    from agents.toolbox import BANKLESS, TOOLS

    paths = result.get("paths", {})
    generic = paths.get("/v1/agent/{name}", {}).get("post")
    if generic is None:
        return
    del paths["/v1/agent/{name}"]
    for name in sorted(ARGUMENTS):
        model = ARGUMENTS[name]
        operation = {**generic, "operationId": f"agent_{name}", "parameters": []}
        if name in TOOLS:
            operation["summary"] = TOOLS[name].description
            operation["description"] = f"Needs the `{TOOLS[name].permission}` permission on the bank."
        else:
            operation["summary"] = BANKLESS[name][1]
            operation["description"] = "Needs `read` on at least one bank." if name == "memory_banks" else ""
        operation["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{schema_name(name)}"}}}}
        register(schema_name(name), model, body=True)
        paths[f"/v1/agent/{name}"] = {"post": operation}


def whole_api_components(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """The post-processing hook: the agent tools' paths first (they register their argument models),
    then every registered model filed under ``components/schemas``."""
    _agent_tool_paths(result)
    return add_pydantic_components(result, generator, request, public)
