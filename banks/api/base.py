from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from rest_framework.request import Request
from rest_framework.views import APIView

from banks.access import Principal
from banks.api.auth import principal_of
from banks.api.wire import parse
from banks.models import Bank
from banks.services.bank_lookup import bank_for
from memoryhub.readers import reader_note, reader_scope_close, reader_scope_open

M = TypeVar("M", bound=BaseModel)


class BankApiView(APIView):
    """A /v1 operation: parse the body, resolve the bank for the caller, call one service."""

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        # The reader this request notes (``principal``) ends with it: the next request on this thread
        # starts with none.
        scope = reader_scope_open()
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            reader_scope_close(scope)

    def principal(self, request: Request) -> Principal:
        principal = principal_of(request)
        reader_note(principal.label, "api")  # the access log names whoever the request reads as
        return principal

    def body(self, request: Request, model: type[M]) -> M:
        return parse(model, request.data)

    def query(self, request: Request, model: type[M]) -> M:
        return parse(model, {k: v for k, v in request.query_params.items()})

    def bank(self, request: Request, bank_id: str, permission: str, *, create: bool = False,
             must_exist: bool = False) -> Bank:
        """The caller's bank. A granted bank that was never written reads as empty (Astrocyte's
        answer to a new bank) unless ``must_exist`` (the bank resource itself, jobs); ``create``
        makes it on first write."""
        return bank_for(self.principal(request), bank_id, permission, create=create,
                        empty_if_missing=not must_exist and not create)

    def actor(self, request: Request) -> str:
        return self.principal(request).label


def ok(data: Any, status: int = 200):  # noqa: ANN201
    from rest_framework.response import Response

    return Response(data, status=status)
