"""Request bodies for reflect, audit, compile, graph, live memory and banks."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, ConfigDict, Field, model_validator

from banks.api.schemas import A_BANK
from banks.api.wire import NOT_BLANK, Depth, Int32, ResultCount, WireModel, one_required
from banks.live.deltas import OP_NAMES


class ReflectRequest(WireModel):
    model_config = ConfigDict(json_schema_extra=A_BANK)

    query: str
    bank_id: str | None = None
    banks: list[str] | None = None
    strategy: Literal["parallel", "cascade", "first_match"] | None = None
    max_tokens: int | None = None
    tags: list[str] | None = None
    include_sources: bool = True
    include_directives: bool = True
    dispositions: Any = None

    @model_validator(mode="after")
    def _needs_a_bank(self) -> ReflectRequest:
        if not self.bank_id and not self.banks:
            raise ValueError("bank_id or banks is required")
        return self


class AuditRequest(WireModel):
    scope: str
    bank_id: str
    max_memories: ResultCount = 50
    max_tokens: int | None = None
    tags: list[str] | None = None


class CompileRequest(WireModel):
    bank_id: str
    scope: str | None = None


class GraphSearchRequest(WireModel):
    query: str
    bank_id: str
    limit: ResultCount = 10


class GraphNeighborsRequest(WireModel):
    entity_ids: list[str]
    bank_id: str
    max_depth: Depth = 2
    limit: ResultCount = 20


class BankQuery(WireModel):
    bank_id: str


class MentalModelListQuery(WireModel):
    bank_id: str
    scope: str | None = None
    kind: str | None = None


class MentalModelCreateRequest(WireModel):
    model_config = ConfigDict(json_schema_extra=one_required(
        content={"type": "string"}, sections={"type": "array"}, structured_doc={"type": "object"}))

    bank_id: str
    # Without an id (the seed documentation creates by ``name``), one is derived from the title.
    model_id: str | None = Field(default=None, validation_alias=AliasChoices("model_id", "name_id"),
                                 json_schema_extra={**NOT_BLANK, "maxLength": 255})
    title: str = Field(validation_alias=AliasChoices("title", "name"), json_schema_extra=NOT_BLANK)
    content: str | None = None
    sections: list[dict[str, Any]] | None = None
    structured_doc: dict[str, Any] | None = None
    scope: str = "bank"
    source_ids: list[str] = Field(default_factory=list)


class MentalModelRefreshRequest(WireModel):
    bank_id: str
    content: str | None = None
    source_ids: list[str] | None = None
    new_source_ids: list[str] | None = None
    expected_revision: int | None = None


class MentalModelUpdateRequest(WireModel):
    bank_id: str
    operations: list[Any] = Field(json_schema_extra={"items": {
        "type": "object", "required": ["op"], "properties": {"op": {"enum": list(OP_NAMES)}}}})
    expected_revision: int | None = Field(default=None, validation_alias=AliasChoices("expected_revision",
                                                                                     "revision"))


class MentalModelRevertRequest(WireModel):
    bank_id: str
    revision: int = Field(ge=1)
    expected_revision: int | None = None


class DiffQuery(WireModel):
    bank_id: str
    from_revision: int = Field(ge=1, validation_alias=AliasChoices("from", "from_revision", "a"))
    to_revision: int = Field(ge=1, validation_alias=AliasChoices("to", "to_revision", "b"))


class DirectiveCreateRequest(WireModel):
    bank_id: str
    rule_text: str = Field(validation_alias=AliasChoices("rule_text", "text", "rule"), json_schema_extra=NOT_BLANK)
    directive_id: str | None = None
    scope: str = "bank"
    priority: Int32 = 0


class DirectiveUpdateRequest(WireModel):
    bank_id: str
    rule_text: str | None = Field(default=None, validation_alias=AliasChoices("rule_text", "text", "rule"))
    scope: str | None = None
    is_active: bool | None = Field(default=None, validation_alias=AliasChoices("is_active", "active"))
    priority: Int32 | None = None
    expected_revision: int | None = None


class ObservationListQuery(WireModel):
    bank_id: str
    scope: str | None = None
    trend: Literal["new", "strengthening", "stable", "weakening", "stale"] | None = None
    limit: ResultCount = 100
    include_invalidated: bool = False


class ObservationCreateRequest(WireModel):
    bank_id: str
    text: str = Field(json_schema_extra=NOT_BLANK)
    # The documentation calls it ``evidence``; the code ``source_ids``: both work.
    source_ids: list[str] | None = Field(default=None, validation_alias=AliasChoices("source_ids", "evidence"))
    scope: str | None = None
    confidence: float = Field(default=0.9, json_schema_extra={"minimum": 0.5, "maximum": 1})


class ObservationUpdateRequest(WireModel):
    bank_id: str
    text: str | None = None
    confidence: float | None = Field(default=None, json_schema_extra={"minimum": 0.5, "maximum": 1})
    scope: str | None = None
    add_source_ids: list[str] | None = None
    remove_source_ids: list[str] | None = None
    reason: str = ""


class ObservationsInvalidateRequest(WireModel):
    bank_id: str
    source_ids: list[str]


class BankCreateRequest(WireModel):
    bank_id: str
    name: str = ""
    description: str = ""
    config: dict[str, Any] | None = None


class BankUpdateRequest(WireModel):
    name: str | None = None
    description: str | None = None
    embedding_provider: str | None = None
    dedup_threshold: float | None = None
    config: dict[str, Any] | None = None


class BankDeleteQuery(WireModel):
    confirm: str = Field(default="", description="The bank id again: anything else is a 400 (nothing deleted)")
    reason: str = ""
    # Always answer 202 with a job, whatever the bank's size (else only banks too big to delete in the request).
    run_async: bool = Field(default=False, alias="async")
