"""CSV cells safe to open in a spreadsheet, and read back exactly by MemoryHub.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as
a formula (``=HYPERLINK(...)``, ``+cmd|...``, ``@SUM(...)``). OWASP's rule: write such a cell with a
leading apostrophe, which spreadsheets show as text. To keep it reversible, a cell made of one or more
apostrophes followed by one of those characters gets one more apostrophe too; reading removes exactly
one leading apostrophe from a cell of that shape and leaves every other cell alone. So ``=1+1`` is
written ``'=1+1`` and read ``=1+1``; ``'=x`` is written ``''=x`` and read ``'=x``; ``'quoted`` and
``don't`` are written and read unchanged.
"""

from __future__ import annotations

import re

_FORMULA = re.compile(r"'*[=+\-@\t\r]")
_NEUTRALISED = re.compile(r"'+[=+\-@\t\r]")


def neutralise(cell: str) -> str:
    return f"'{cell}" if _FORMULA.match(cell) else cell


def restore(cell: str) -> str:
    return cell[1:] if _NEUTRALISED.match(cell) else cell


def neutralise_row(row: list[object]) -> list[object]:
    """A row for ``csv.writer``: every text cell neutralised, numbers and booleans as they are."""
    return [neutralise(cell) if isinstance(cell, str) else cell for cell in row]


__all__ = ["neutralise", "neutralise_row", "restore"]
