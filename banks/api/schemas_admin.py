"""Request bodies for the /v1/admin routes (holds, lifecycle)."""

from __future__ import annotations

from banks.api.wire import WireModel


class HoldSetRequest(WireModel):
    hold_id: str
    reason: str
    set_by: str = "user:api"


class HoldReleaseQuery(WireModel):
    reason: str = ""


__all__ = ["HoldReleaseQuery", "HoldSetRequest"]
