"""The arguments of every agent tool, one pydantic model each.

The one description of a tool's arguments: ``run_tool`` validates every call against it (REST
``/v1/agent/<tool>`` and MCP alike, so a wrong type is a 400 naming the field on both), the MCP
server builds each tool's signature from it, and the OpenAPI document publishes it as the body of
``POST /v1/agent/<tool>``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from banks.api.wire import Int32, format_errors
from memoryhub.errors import InvalidInput
from memoryhub.input_rules import check_request_caps

Count = Int32  # whole numbers the tools clamp into their own range (limit, max_results, ...)


class ToolArgs(BaseModel):
    # As the REST bodies: unknown keys are ignored, "5" is read as 5, "x" is refused.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class BankArgs(ToolArgs):
    bank_id: str = Field(description="The bank the tool works on")


class RetainArgs(BankArgs):
    content: str
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    occurred_at: str | None = Field(default=None, description="ISO 8601 date-time or epoch seconds")
    source: str | None = None


class RecallArgs(ToolArgs):
    query: str
    bank_id: str | None = Field(default=None, description="One bank (or name several in banks)")
    banks: list[str] | None = None
    strategy: Literal["parallel", "cascade", "first_match"] | None = None
    max_results: Count = 10
    tags: list[str] | None = None
    fact_types: list[str] | None = None
    as_of: str | None = None
    max_tokens: Int32 | None = None
    session_id: str | None = None
    layer_weights: dict[str, float] | None = None
    detail_level: str | None = None
    external_context: list[dict[str, Any] | str] | None = None


class ReflectArgs(ToolArgs):
    query: str | None = Field(default=None, description="A question; without one, a consolidation pass (write)")
    bank_id: str | None = Field(default=None, description="One bank (or name several in banks)")
    banks: list[str] | None = None
    strategy: Literal["parallel", "cascade", "first_match"] | None = None
    include_sources: bool = True
    topic: str | None = None
    max_tokens: Int32 | None = None
    tags: list[str] | None = None


class ForgetArgs(BankArgs):
    memory_ids: list[str] | None = None
    tags: list[str] | None = None
    reason: str | None = None


class DirectiveArgs(BankArgs):
    rule_text: str
    directive_id: str | None = None
    scope: str = "bank"


class ListObservationsArgs(BankArgs):
    scope: str | None = None
    trend: str | None = None
    limit: Count = 100


class ObservationArgs(BankArgs):
    observation_id: str


class CreateObservationArgs(BankArgs):
    text: str
    source_ids: list[str] | None = None
    scope: str | None = None
    confidence: float = 0.9
    evidence: list[str] | None = Field(default=None, description="Another name for source_ids")


class ListModelsArgs(BankArgs):
    scope: str | None = None


class CreateModelArgs(BankArgs):
    model_id: str | None = None
    title: str | None = None
    name: str | None = Field(default=None, description="Another name for title")
    content: str | None = None
    sections: list[dict[str, Any]] | None = None
    scope: str = "bank"
    source_ids: list[str] | None = None


class UpdateModelArgs(BankArgs):
    model_id: str
    operations: list[dict[str, Any]]
    expected_revision: Int32 | None = None


class ModelArgs(BankArgs):
    model_id: str


class RefreshModelArgs(BankArgs):
    model_id: str
    new_source_ids: list[str]
    content: str | None = None


class AddArgs(BankArgs):
    content: str
    type: str = "episodic"
    scope: str = "user"
    tags: list[str] | None = None


class UpdateArgs(BankArgs):
    traceId: str  # noqa: N815  (AgentOS's name)
    content: str | None = None
    tags: list[str] | None = None


class DeleteArgs(BankArgs):
    traceId: str  # noqa: N815


class MergeArgs(BankArgs):
    traceIds: list[str]  # noqa: N815
    content: str | None = None


class SearchArgs(BankArgs):
    query: str
    type: str | None = None
    scope: str | None = None
    limit: Count = 10


class HistoryArgs(BankArgs):
    query: str
    as_of: str
    max_results: Count = 10
    tags: list[str] | None = None
    max_tokens: Int32 | None = None


class AuditArgs(BankArgs):
    scope: str
    max_memories: Count = 50
    max_tokens: Int32 | None = None
    tags: list[str] | None = None


class CompileArgs(BankArgs):
    scope: str | None = None


class GraphSearchArgs(BankArgs):
    query: str
    limit: Count = 10


class GraphNeighborsArgs(BankArgs):
    entity_ids: list[str]
    max_depth: Count = 2
    limit: Count = 20


class HoldSetArgs(BankArgs):
    hold_id: str
    reason: str
    set_by: str | None = None


class HoldReleaseArgs(BankArgs):
    hold_id: str
    reason: str | None = None


class NoArgs(ToolArgs):
    pass


ARGUMENTS: dict[str, type[ToolArgs]] = {
    "memory_retain": RetainArgs, "memory_recall": RecallArgs, "memory_reflect": ReflectArgs,
    "memory_forget": ForgetArgs, "memory_create_directive": DirectiveArgs,
    "memory_list_observations": ListObservationsArgs, "memory_get_observation": ObservationArgs,
    "memory_create_observation": CreateObservationArgs, "memory_delete_observation": ObservationArgs,
    "memory_list_mental_models": ListModelsArgs, "memory_create_mental_model": CreateModelArgs,
    "memory_update_mental_model": UpdateModelArgs, "memory_delete_mental_model": ModelArgs,
    "memory_add": AddArgs, "memory_update": UpdateArgs, "memory_delete": DeleteArgs, "memory_merge": MergeArgs,
    "memory_search": SearchArgs, "memory_history": HistoryArgs, "memory_audit": AuditArgs,
    "memory_compile": CompileArgs, "memory_graph_search": GraphSearchArgs,
    "memory_graph_neighbors": GraphNeighborsArgs, "memory_refresh_mental_model": RefreshModelArgs,
    "memory_lifecycle": BankArgs, "memory_bank_health": BankArgs, "memory_hold_set": HoldSetArgs,
    "memory_hold_release": HoldReleaseArgs, "memory_banks": NoArgs, "memory_health": NoArgs,
}


def schema_name(tool: str) -> str:
    """The name of a tool's argument model in the OpenAPI document (one per tool, even when shared)."""
    return "".join(part.capitalize() for part in tool.split("_")) + "Arguments"


def tool_arguments(name: str, args: Any) -> dict[str, Any]:
    """``args`` checked against the tool's model: the keys given (and not null), with their values read
    as the model reads them ("5" as 5); a wrong type is an InvalidInput naming the field."""
    if not isinstance(args, dict):
        raise InvalidInput("arguments must be an object")
    model = ARGUMENTS[name]
    check_request_caps(args)
    try:
        parsed = model.model_validate(args)
    except ValidationError as exc:
        errors = exc.errors()
        field = ".".join(str(p) for p in errors[0]["loc"]) if errors else None
        raise InvalidInput(format_errors(exc), field=field or None, prefix=False) from None
    given = {key: value for key, value in parsed.model_dump(exclude_unset=True).items() if value is not None}
    return given


__all__ = ["ARGUMENTS", "ToolArgs", "schema_name", "tool_arguments"]
