"""Request bodies for the /v1/admin routes (holds, lifecycle)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from banks.api.wire import NOT_BLANK, WireModel
from banks.live.lifecycle import MAX_DAYS

DAYS: dict[str, Any] = {"minimum": 0, "maximum": MAX_DAYS}


class HoldSetRequest(WireModel):
    hold_id: str = Field(json_schema_extra={**NOT_BLANK, "maxLength": 255})
    reason: str = Field(json_schema_extra=NOT_BLANK)
    set_by: str = "user:api"


class HoldReleaseQuery(WireModel):
    reason: str = ""




class LifecycleRunRequest(WireModel):
    bank_id: str


class LifecyclePolicyRequest(WireModel):
    # Left out: unchanged (a new policy is enabled).
    enabled: bool = True
    delete_after_days: int | None = Field(default=None, json_schema_extra=DAYS)
    archive_after_days: int | None = Field(default=None, json_schema_extra=DAYS)
    fact_type_overrides: dict[str, dict[str, int | None]] | None = None
    exempt_tags: list[str] | None = None


__all__ = ["HoldReleaseQuery", "HoldSetRequest", "LifecyclePolicyRequest", "LifecycleRunRequest"]
