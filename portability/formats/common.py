"""Small pure helpers shared by the archive formats: numbers, lists, timestamps out, bounded line reading.

Reading a time from outside is memoryhub.input_rules.parse_time (banks reads the same forms)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any


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
