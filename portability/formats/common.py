"""Small pure helpers shared by the archive formats: timestamps, bounded line reading."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import IO, Any


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


def number(value: Any, default: float = 1.0) -> float:
    """A finite number from a hand-editable file, or ``default``: a bad value must not sink the import."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value and abs(value) != float("inf"):
        return float(value)
    return default


def str_list(value: Any) -> list[str]:
    """The strings of a list (aliases, tags) from a hand-editable file; anything else is no list at all."""
    return [str(v) for v in value if isinstance(v, str | int | float)] if isinstance(value, list) else []


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def bounded_lines(fp: IO[bytes], max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """Yield (line number, raw line) one at a time; a line over ``max_bytes`` yields None and is skipped
    without ever holding more than ``max_bytes`` of it in memory."""
    number = 0
    while True:
        line = fp.readline(max_bytes + 1)
        if not line:
            return
        number += 1
        if len(line) > max_bytes and not line.endswith(b"\n"):
            # Drain the rest of the over-long line in bounded chunks.
            while True:
                rest = fp.readline(max_bytes + 1)
                if not rest or rest.endswith(b"\n"):
                    break
            yield number, None
            continue
        yield number, line
