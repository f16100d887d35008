"""Request bodies for the /v1/admin routes (holds, lifecycle)."""

from __future__ import annotations

from banks.api.wire import WireModel


class HoldSetRequest(WireModel):
    hold_id: str
    reason: str
    set_by: str = "user:api"


class HoldReleaseQuery(WireModel):
    reason: str = ""




class LifecycleRunRequest(WireModel):
    bank_id: str


class LifecyclePolicyRequest(WireModel):
    enabled: bool | None = None
    delete_after_days: int | None = None
    archive_after_days: int | None = None
    fact_type_overrides: dict[str, dict[str, int | None]] | None = None
    exempt_tags: list[str] | None = None


__all__ = ["HoldReleaseQuery", "HoldSetRequest", "LifecyclePolicyRequest", "LifecycleRunRequest"]
