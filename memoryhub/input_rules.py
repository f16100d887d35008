"""Pure rules for what input can be stored at all, shared by every surface.

PostgreSQL refuses NUL characters in text and JSONB (and NaN or Infinity in JSONB), psycopg cannot encode a lone
surrogate, Python's JSON reader recurses once per nesting level, and a timestamp
whose UTC time leaves years 1..9999 can be stored by PostgreSQL but never read back
by Python. Each of these once turned one request into a bank that answered 500 on
every later read, so they are refused at the edge with the field named.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from memoryhub.errors import InvalidInput

MAX_NESTING = 32
# Within a day of the edges a UTC time still overflows when shown in a local zone.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
MAX_OFFSET = timedelta(hours=15, minutes=59)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# Astrocyte's bank id rule: 1-255 characters, alphanumeric first, then [a-zA-Z0-9._:@-].
BANK_ID = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._:@-]{0,254}")


class UnstorableInput(InvalidInput, ValueError):
    """A value that cannot be stored: a 400 naming ``field`` on every surface.

    A ValueError too, so pydantic validators report it at the field's location.
    """

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message, field=field)
        self.reason = message


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "NUL characters (\\u0000) are not allowed"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "lone UTF-16 surrogates are not valid text"
    return None


def check_text(text: str, field: str | None = None) -> str:
    problem = _text_problem(text)
    if problem:
        raise UnstorableInput(field, problem)
    return text


def check_storable(value: Any, field: str = "", *, depth: int = 0) -> None:
    """Walk a decoded JSON value; raise ``UnstorableInput`` at the first thing no store can hold."""
    if depth > MAX_NESTING:
        raise UnstorableInput(field or None, f"nested deeper than {MAX_NESTING} levels")
    if isinstance(value, str):
        problem = _text_problem(value)
        if problem:
            raise UnstorableInput(field or None, problem)
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise UnstorableInput(field or None, "integer out of the 64-bit range")
    elif isinstance(value, float):
        # Python's JSON reader takes NaN and Infinity; JSON and PostgreSQL's jsonb do not.
        if not math.isfinite(value):
            raise UnstorableInput(field or None, "NaN and Infinity are not JSON numbers")
    elif isinstance(value, dict):
        for key, item in value.items():
            key_text = str(key)
            problem = _text_problem(key_text)
            path = f"{field}.{key_text}" if field else key_text
            if problem:
                raise UnstorableInput(field or None, f"key {key_text.encode('utf-8', 'backslashreplace')!r}: "
                                                     f"{problem}")
            check_storable(item, path, depth=depth + 1)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            check_storable(item, f"{field}[{index}]" if field else f"[{index}]", depth=depth + 1)


def utc_datetime(value: datetime | date, field: str | None = None) -> datetime:
    """Normalise to an aware UTC datetime (naive means UTC) inside the range every reader can show."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    offset = value.utcoffset()
    if offset is not None and abs(offset) > MAX_OFFSET:
        raise UnstorableInput(field, "time-zone offset beyond ±15:59")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        normalised = value.astimezone(UTC)
    except (OverflowError, ValueError):
        normalised = None
    if normalised is None or not EARLIEST <= normalised <= LATEST:
        raise UnstorableInput(field, "date out of range (must lie between 0001-01-02 and 9999-12-30 UTC)")
    return normalised


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 (``Z``, offsets, microseconds, date-only) or epoch seconds/milliseconds; naive means UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) or (isinstance(value, str) and value.strip().lstrip("-").replace(".", "", 1)
                                          .isdigit()):
        number = float(value)
        # Epoch milliseconds are 13 digits today; seconds are 10.
        seconds = number / 1000.0 if abs(number) > 1e11 else number
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
        except ValueError:
            return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def check_int32(value: int, field: str | None = None) -> int:
    if not INT32_MIN <= value <= INT32_MAX:
        raise UnstorableInput(field, f"must lie between {INT32_MIN} and {INT32_MAX}")
    return value


def check_bank_id(bank_id: str) -> str:
    """Checked before any lookup, so a bad id is the same 400 on every route (Astrocyte's words)."""
    if not BANK_ID.fullmatch(bank_id):
        shown = bank_id[:80].encode("ascii", "backslashreplace").decode("ascii")
        raise InvalidInput(f"Invalid bank_id {shown!r}: must be 1-255 characters, start with alphanumeric, "
                           "and contain only [a-zA-Z0-9._:@-]", field="bank_id", prefix=False)
    return bank_id


# How many items one request may list, per field name, and the setting that says so. A request over
# a cap is refused (400 naming the field) before any of it is worked on: one request of 20,000
# mental-model operations once held a web worker for 47 s.
REQUEST_CAPS = {
    "banks": "MEMORYHUB_MAX_BANKS_PER_REQUEST",
    "tags": "MEMORYHUB_MAX_TAGS_PER_REQUEST",
    "memory_ids": "MEMORYHUB_MAX_IDS_PER_REQUEST",
    "operations": "MEMORYHUB_MAX_DELTA_OPERATIONS",
    "entity_ids": "MEMORYHUB_MAX_ENTITY_IDS",
}


def request_cap(field: str) -> int | None:
    from django.conf import settings

    name = REQUEST_CAPS.get(field)
    return getattr(settings, name, None) if name else None


def check_count(values: Any, field: str) -> None:
    """Refuse a list longer than ``field``'s cap (REQUEST_CAPS)."""
    cap = request_cap(field)
    if cap and isinstance(values, list | tuple) and len(values) > cap:
        raise InvalidInput(f"at most {cap} items per request (got {len(values)}; {REQUEST_CAPS[field]})",
                           field=field)


def check_request_caps(data: Any) -> None:
    """Every capped list at the top level of a request body."""
    if isinstance(data, dict):
        for field in REQUEST_CAPS:
            check_count(data.get(field), field)
