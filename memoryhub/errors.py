"""Domain errors and the single place that turns any error into the API's JSON body.

Every error answers one body carrying both shapes clients parse:
``{"detail": "...", "error": {"code": "...", "message": "..."}}`` — ``detail``
is what Astrocyte's gateway sends, ``error`` what its documentation promises.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, JsonResponse

logger = logging.getLogger(__name__)


class MemoryHubError(Exception):
    status = 400
    code = "invalid_request"

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class InvalidInput(MemoryHubError):
    status, code = 400, "invalid_request"

    def __init__(self, message: str, *, field: str | None = None, prefix: bool = True, **extra: Any) -> None:
        super().__init__(f"{field}: {message}" if field and prefix else message, **extra)
        self.field = field


class NotFound(MemoryHubError):
    status, code = 404, "not_found"


class BankNotFound(NotFound):
    code = "bank_not_found"

    def __init__(self, bank_id: str) -> None:
        super().__init__(f"Bank '{bank_id}' not found")
        self.bank_id = bank_id


class AccessDenied(MemoryHubError):
    status, code = 403, "access_denied"

    def __init__(self, principal: str, permission: str, bank_id: str) -> None:
        # Same wording as Astrocyte's AccessDenied, which clients may match on.
        super().__init__(f"Principal '{principal}' denied '{permission}' on bank '{bank_id}'")


class Conflict(MemoryHubError):
    status, code = 409, "conflict"


class LegalHoldActive(Conflict):
    # 423 Locked: what Astrocyte's team client expects of a forget on a held bank (it names the hold).
    status, code = 423, "legal_hold_active"

    def __init__(self, bank_id: str, hold_ids: list[str]) -> None:
        super().__init__(
            f"Bank '{bank_id}' is under legal hold ({', '.join(hold_ids)}); release the hold first, "
            "or erase for compliance with a reason", bank_id=bank_id, hold_ids=hold_ids)


class Unprocessable(MemoryHubError):
    status, code = 422, "unprocessable"


class TooLargeForRequest(MemoryHubError):
    """Work too big to do inside one request (a worker would be held for minutes): the message says how to
    run it as a job instead (``"async": true``)."""

    status, code = 413, "too_large_for_request"


class RateLimited(MemoryHubError):
    status, code = 429, "rate_limited"


class ProviderUnavailable(MemoryHubError):
    status, code = 503, "provider_unavailable"


class ProviderError(Exception):
    """A remote or local provider (embeddings, language model, reranker) failed; the API answers 503
    naming the provider. Raised by banks.providers, answered here."""

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(message)
        self.provider = provider


class ProviderTimeout(ProviderError):
    pass


class ServiceUnavailable(MemoryHubError):
    """A part MemoryHub depends on (database, broker) cannot be reached: try again shortly."""

    status, code = 503, "service_unavailable"

    def __init__(self, message: str, *, retry_after: int = 5, **extra: Any) -> None:
        super().__init__(message, retry_after=retry_after, retry_after_seconds=retry_after, **extra)
        self.retry_after = retry_after


DATABASE_RETRY_AFTER = 5


# Unique constraints a concurrent writer can trip, and what the loser is told.
UNIQUE_CONFLICTS = {
    "memory_content_unique_per_bank": "A live memory of this bank already holds the same content",
    "memory_id_unique_per_bank": "A memory with this memory_id already exists in the bank",
    "entity_id_unique_per_bank": "An entity with this id already exists in the bank",
    "entity_link_unique": "These entities are already linked this way",
    "memory_link_unique": "These memories are already linked this way",
    "banks_bank_bank_id_key": "A bank with this id already exists",
    "mental_model_unique_per_bank": "A mental model with this id already exists in the bank",
    "revision_number_unique": "The mental model changed meanwhile",
    "observation_id_unique_per_bank": "An observation with this id already exists in the bank",
    "wiki_page_unique_per_bank": "This wiki page was written meanwhile",
}


def violated_constraint(exc: BaseException) -> str | None:
    """The name of the constraint an IntegrityError reports (from the driver's diagnostics, not its message)."""
    cause = exc.__cause__ or exc
    diag = getattr(cause, "diag", None)
    name: str | None = getattr(diag, "constraint_name", None)
    # On a partitioned install (MEMORYHUB_BANK_PARTITIONS) the partition's copy of the constraint is the
    # one violated; it carries the partition's suffix (memory_id_unique_per_bank_p0 on banks_memory_p0).
    table: str | None = getattr(diag, "table_name", None)
    suffix = _PARTITION_SUFFIX.search(table or "")
    if name and suffix and name.endswith(suffix.group(0)):
        return name[: -len(suffix.group(0))]
    return name


_PARTITION_SUFFIX = re.compile(r"_p\d+$")


# SQLSTATEs of a transaction that lost to a concurrent one (deadlock, lock timeout, serialization
# failure): nothing is wrong with the database or the request, and the same request succeeds again.
LOCK_CONFLICT_STATES = frozenset({"40P01", "55P03", "40001"})


def is_lock_conflict(exc: BaseException) -> bool:
    cause = exc.__cause__ or exc
    return getattr(cause, "sqlstate", None) in LOCK_CONFLICT_STATES


def lock_conflict() -> Conflict:
    return Conflict("A concurrent writer held the same rows (deadlock or lock timeout); nothing was written: retry",
                    retry=True, retry_after=1)


_T = TypeVar("_T")


def once_more_on_lock_conflict(write: Callable[[], _T]) -> _T:
    """Run ``write``, one whole transaction of its own that tells nothing outside it before it commits
    (so running it again is safe); if it lost a deadlock or a lock timeout to a concurrent writer (it
    rolled back whole), run it once more; a second loss is the caller's ``409`` (retry)."""
    from django.db import OperationalError

    try:
        return write()
    except OperationalError as exc:
        if not is_lock_conflict(exc):
            raise
    try:
        return write()
    except OperationalError as again:
        if is_lock_conflict(again):
            raise lock_conflict() from again
        raise


def database_error_as_domain_error(exc: BaseException) -> MemoryHubError | None:
    """The answer a database error deserves, or None when it is a bug (a 500).

    An unreachable or restarting server (OperationalError, InterfaceError) is a 503 the
    client retries; a value the column type refuses (DataError) is the caller's 400; a unique
    constraint lost to a concurrent writer is a 409 naming the constraint.
    """
    from django.db import DataError, IntegrityError, InterfaceError, OperationalError

    if isinstance(exc, IntegrityError):
        constraint = violated_constraint(exc)
        if constraint in UNIQUE_CONFLICTS:
            return Conflict(f"{UNIQUE_CONFLICTS[constraint]}; reload and try again", constraint=constraint)
        return None

    if is_lock_conflict(exc):
        return lock_conflict()
    if isinstance(exc, OperationalError | InterfaceError):
        return ServiceUnavailable("The database is unavailable; try again shortly",
                                  retry_after=DATABASE_RETRY_AFTER)
    if isinstance(exc, DataError):
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid value"
        return InvalidInput(f"a value cannot be stored: {first_line}")
    return None


def error_body(status: int, code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"detail": message, "error": {"code": code, "message": message}, **extra}


_DRF_CODES = {
    400: "invalid_request",
    401: "unauthenticated",
    403: "access_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


def _drf_message(detail: Any) -> str:  # noqa: D401
    if isinstance(detail, dict):
        parts = [f"{k}: {_drf_message(v)}" for k, v in detail.items()]
        return "; ".join(parts[:5])
    if isinstance(detail, list):
        return "; ".join(_drf_message(d) for d in detail[:5])
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Any:
    # DRF is imported here, not at module level: its settings import our authentication
    # classes, which import these domain errors.
    from rest_framework import exceptions as drf
    from rest_framework.response import Response
    from rest_framework.views import exception_handler as drf_exception_handler

    exc = database_error_as_domain_error(exc) or exc
    if isinstance(exc, MemoryHubError):
        body = error_body(exc.status, exc.code, exc.message, **exc.extra)
        if isinstance(exc, InvalidInput) and exc.field:
            body["error"]["field"] = exc.field
        domain = Response(body, status=exc.status)
        if isinstance(exc, ServiceUnavailable):
            domain["Retry-After"] = str(exc.retry_after)
        return domain
    if isinstance(exc, ProviderError):
        return Response(error_body(503, "provider_unavailable", str(exc), provider=exc.provider), status=503)
    if isinstance(exc, DjangoValidationError):
        exc = drf.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    elif isinstance(exc, Http404):
        exc = drf.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = drf.PermissionDenied()
    if isinstance(exc, drf.Throttled):
        # Throttled.__init__ sets ``wait``; the stubs do not declare it.
        wait = getattr(exc, "wait", None) or 1
        throttled = Response(
            error_body(429, "rate_limited", "Rate limit exceeded", retry_after=wait, retry_after_seconds=wait),
            status=429,
        )
        throttled["Retry-After"] = str(max(1, int(wait + 0.999)))
        return throttled
    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("unhandled error in %s", context.get("view"))
        return Response(error_body(500, "internal_error", "Internal server error"), status=500)
    status = response.status_code
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        status = 401
    message = _drf_message(exc.detail) if isinstance(exc, drf.APIException) else str(exc)
    body = error_body(status, _DRF_CODES.get(status, "error"), message)
    new = Response(body, status=status)
    for header in ("WWW-Authenticate", "Allow", "Retry-After"):
        if header in response:
            new[header] = response[header]
    return new


def json_not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return JsonResponse(error_body(404, "not_found", "Not Found"), status=404)


def json_server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body(500, "internal_error", "Internal server error"), status=500)
