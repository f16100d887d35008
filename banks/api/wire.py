"""Helpers shared by the /v1 wire models: parsing with readable errors, clamps, UTC datetimes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, TypeVar

from django.conf import settings
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError

from memoryhub.errors import InvalidInput
from memoryhub.input_rules import (
    UnstorableInput,
    check_int32,
    check_request_caps,
    check_storable,
    utc_datetime,
)

M = TypeVar("M", bound=BaseModel)


class WireModel(BaseModel):
    # Like Astrocyte's gateway: unknown keys are ignored, "5" is read as 5.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    # Top-level fields judged by their own rule instead of the storable-text check (a filesystem
    # path is refused by path containment, with its 422).
    raw_fields: ClassVar[frozenset[str]] = frozenset()


def _utc(value: datetime | None) -> datetime | None:
    # UnstorableInput is a ValueError: pydantic reports it against the field's location.
    return utc_datetime(value) if value is not None else None


def _int32(value: int) -> int:
    return check_int32(value)


def _clamp_results(value: Any) -> Any:
    if isinstance(value, int | float | str) and str(value).lstrip("-").isdigit():
        return max(1, min(int(value), settings.MEMORYHUB_MAX_RESULT_LIMIT))
    return value


def _clamp_depth(value: Any) -> Any:
    if isinstance(value, int | float | str) and str(value).lstrip("-").isdigit():
        return max(0, min(int(value), settings.MEMORYHUB_GRAPH_MAX_DEPTH))
    return value


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
# Columns such as a directive's priority are PostgreSQL ``integer``.
Int32 = Annotated[int, AfterValidator(_int32)]
ResultCount = Annotated[int, BeforeValidator(_clamp_results)]
Depth = Annotated[int, BeforeValidator(_clamp_depth)]


def format_errors(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        loc = ".".join(str(p) for p in error.get("loc", ()))
        message = error.get("msg", "invalid")
        parts.append(f"{loc}: {message}" if loc else message)
    return "; ".join(parts)


def parse(model: type[M], data: Any) -> M:
    if not isinstance(data, dict):
        raise InvalidInput("the request body must be a JSON object")
    check_request_caps(data)
    try:
        raw: frozenset[str] = getattr(model, "raw_fields", frozenset())
        check_storable({k: v for k, v in data.items() if k not in raw} if raw else data)
    except UnstorableInput as exc:
        raise InvalidInput(exc.reason, field=exc.field) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        field = ".".join(str(p) for p in errors[0]["loc"]) if errors else None
        field = field or None
        raise InvalidInput(format_errors(exc), field=field, prefix=False) from None


# Rules the services check themselves, with their own messages, stated in the OpenAPI document too so
# clients (and generated requests) know them. Validation is unchanged: these only describe it.
NOT_BLANK: dict[str, Any] = {"minLength": 1, "pattern": r"\S"}


def one_required(**branches: dict[str, Any]) -> dict[str, Any]:
    """Model-level JSON schema: at least one of these fields, given and matching its schema."""
    return {"anyOf": [{"required": [name], "properties": {name: schema}} for name, schema in branches.items()]}
