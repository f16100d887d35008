"""/v1/banks/{bank_id}/sync/push and /changes: keep a client's local copy of a bank in sync."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field
from rest_framework.request import Request
from rest_framework.response import Response

from banks.api.base import BankApiView, ok
from banks.api.wire import WireModel
from banks.selectors.changes import MAX_LIMIT, changes_page
from banks.services.sync import sync_push
from memoryhub.errors import BankNotFound


class SyncPushRequest(WireModel):
    # Records are judged one by one (a bad record is "rejected", the rest still stored).
    records: list[Any]


def _clamp_changes(value: Any) -> Any:
    # As Astrocyte's gateway: a page size out of range is brought into it, not refused.
    if isinstance(value, int | float | str) and str(value).lstrip("-").isdigit():
        return max(1, min(int(value), MAX_LIMIT))
    return value


class ChangesQuery(WireModel):
    cursor: str | None = None
    limit: Annotated[int, BeforeValidator(_clamp_changes)] = Field(
        default=100, json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT})


class SyncPushApi(BankApiView):
    def post(self, request: Request, bank_id: str) -> Response:
        body = self.body(request, SyncPushRequest)
        bank = self.bank(request, bank_id, "write", create=True)
        return ok({"results": sync_push(bank=bank, actor=self.actor(request), records=body.records,
                                         by=self.principal(request))})


class ChangesApi(BankApiView):
    def get(self, request: Request, bank_id: str) -> Response:
        query = self.query(request, ChangesQuery)
        try:
            bank = self.bank(request, bank_id, "read", must_exist=True)
        except BankNotFound:
            bank = None  # a granted bank nothing was written to yet has no changes
        page = changes_page(bank, bank_id=bank_id, cursor=query.cursor, limit=query.limit)
        return ok({"changes": page.changes, "next_cursor": page.next_cursor, "has_more": page.has_more})
