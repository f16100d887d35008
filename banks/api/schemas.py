"""Request bodies of /v1, field for field as Astrocyte's gateway and the seed documentation name them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from banks.api.wire import NOT_BLANK, ResultCount, UtcDatetime, WireModel, one_required

A_BANK = one_required(bank_id={"type": "string"}, banks={"type": "array", "minItems": 1})


class RetainRequest(WireModel):
    content: str = Field(json_schema_extra=NOT_BLANK)
    bank_id: str
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    occurred_at: UtcDatetime | None = None
    source: str | None = Field(default=None, max_length=2048)
    # Documented by the seed's Python signature; accepted over REST too.
    content_type: str = "text"
    extraction_profile: str | None = None
    pii_detected: bool = False
    # MemoryHub extensions.
    memory_id: str | None = Field(default=None, min_length=1, max_length=255)
    fact_type: str | None = Field(default=None, min_length=1, max_length=64)
    memory_layer: str | None = Field(default=None, max_length=64)
    entities: list[dict[str, Any]] | None = None
    # Store the text even when a memory of the bank is a near-duplicate of it (the same text twice is
    # still refused).
    allow_duplicate: bool = False


class TimeRange(WireModel):
    start: UtcDatetime | None = None
    end: UtcDatetime | None = None


class RecallRequest(WireModel):
    model_config = ConfigDict(json_schema_extra=A_BANK)

    query: str
    bank_id: str | None = None
    banks: list[str] | None = None
    strategy: Literal["parallel", "cascade", "first_match"] | None = None
    max_results: ResultCount = 10
    max_tokens: int | None = None
    tags: list[str] | None = None
    fact_types: list[str] | None = None
    time_range: TimeRange | list[UtcDatetime | None] | None = None
    as_of: UtcDatetime | None = None
    layers: list[str] | None = None
    include_sources: bool = False
    # Omitted: the bank's default (banks.recall_fusion.RecallConfig.include_directives, on unless the bank
    # turns it off); true or false overrides it for this call.
    include_directives: bool | None = None
    include_observations: bool = False
    include_trace: bool = True
    min_results_to_stop: int = Field(default=3, ge=1)
    cascade_order: list[str] | None = None
    bank_weights: dict[str, float] | None = None
    # Astrocyte's Python/MCP recall options (the seed documents them); checked by recall_shaping.
    layer_weights: dict[str, Any] | None = None  # {layer: weight >= 0}
    detail_level: str | None = None  # titles | summary | bodies | full
    external_context: list[dict[str, Any] | str] | None = None  # the caller's own hits: {text, score, ...}

    @model_validator(mode="after")
    def _needs_a_bank(self) -> RecallRequest:
        if not self.bank_id and not self.banks:
            raise ValueError("bank_id or banks is required")
        if isinstance(self.time_range, list) and len(self.time_range) != 2:
            raise ValueError("time_range must be [start, end]")
        return self

    def time_bounds(self) -> tuple[Any, Any] | None:
        if self.time_range is None:
            return None
        if isinstance(self.time_range, TimeRange):
            return (self.time_range.start, self.time_range.end)
        return (self.time_range[0], self.time_range[1])


class HistoryRequest(WireModel):
    query: str
    bank_id: str
    as_of: UtcDatetime
    max_results: ResultCount = 10
    max_tokens: int | None = None
    tags: list[str] | None = None


class ForgetRequest(WireModel):
    model_config = ConfigDict(json_schema_extra=one_required(
        memory_ids={"type": "array", "minItems": 1}, tags={"type": "array", "minItems": 1},
        scope={"const": "all"}, before_date={"type": "string"}))

    bank_id: str
    memory_ids: list[str] | None = None
    tags: list[str] | None = None
    scope: Literal["all"] | None = None
    before_date: UtcDatetime | None = None
    compliance: bool = False
    reason: str | None = None
    archive: bool = False
    # Astrocyte Oct-2026: erase purges the named memories' content, keeping their tombstones.
    erase: bool = False
