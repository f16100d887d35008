"""A memory line's vector taken as the text it arrived in, without parsing its numbers in Python. Pure.

An archive that carries its vectors spends most of its reading on them: parsing 384 numbers a line
into floats, checking them, then formatting them again as pgvector's text for COPY (at 100,000 lines,
10 of 22 seconds of storing). pgvector reads the same JSON array text itself, so a line whose
``"embedding"`` is a plain array of numbers keeps it as text (``VectorText``) and the rest of the line
is parsed as usual. The array must match a grammar whose every number PostgreSQL stores as it is:
JSON's own number syntax, with at most 38 integer digits and no positive exponent (so nothing can
exceed single precision; a negative exponent at worst rounds to zero, as it does through a float).
Anything else (an exponent like ``1e+39``, a NaN, a string) takes the ordinary path and its checks.

The vector is also stored more exactly this way: PostgreSQL rounds the archive's decimal straight to
single precision, where the ordinary path writes seven significant digits of a double.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import overload

_KEY = re.compile(r'"embedding"\s*:\s*(?=\[)')
_NUMBER = r"-?(?:0|[1-9][0-9]{0,37})(?:\.[0-9]+)?(?:[eE]-[0-9]+)?"
_ARRAY = re.compile(rf"\[\s*{_NUMBER}(?:\s*,\s*{_NUMBER})*\s*\]")
# What the array is replaced with while the rest of the line is parsed: a JSON string no archive holds
# (a NUL is refused in every text field), so finding it at the top of the parsed line proves the array
# cut out was the line's own "embedding" and not one inside its metadata.
PLACEHOLDER = "\x00embedding"
_PLACEHOLDER_JSON = json.dumps(PLACEHOLDER)


class VectorText(Sequence[float]):
    """A vector as JSON array text that pgvector reads as it is; its values are parsed only if asked."""

    __slots__ = ("_values", "dimensions", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.dimensions = text.count(",") + 1
        self._values: list[float] | None = None

    def values(self) -> list[float]:
        if self._values is None:
            self._values = [float(x) for x in json.loads(self.text)]
        return self._values

    def __len__(self) -> int:
        return self.dimensions

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> list[float]: ...

    def __getitem__(self, index: int | slice) -> float | list[float]:
        return self.values()[index]

    def __iter__(self) -> Iterator[float]:
        return iter(self.values())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, VectorText):
            return self.values() == other.values()
        return isinstance(other, list) and self.values() == other

    # Equal to a list, which is unhashable: so is this.
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"VectorText({self.dimensions} values)"


def cut_vector(line: str) -> tuple[str, VectorText] | None:
    """``line`` with its ``"embedding"`` array replaced by ``PLACEHOLDER``, and the array as ``VectorText``;
    None when the line has no such array, more than one candidate, or numbers outside the grammar.

    The caller parses the rest and must check that its top-level ``"embedding"`` is ``PLACEHOLDER``."""
    key = _KEY.search(line)
    if key is None:
        return None
    array = _ARRAY.match(line, key.end())
    if array is None or _KEY.search(line, array.end()) is not None or _PLACEHOLDER_JSON in line:
        return None
    return line[:key.end()] + _PLACEHOLDER_JSON + line[array.end():], VectorText(array.group())
