"""A deleted bank's folder set aside, so a new bank of the same id starts with none of its files.

The folder ``<root>/banks/<tenant>/<bank id>/`` moves, by descriptor and without following a symlink, to
``<root>/banks/.trash/<UTC time>/<tenant>/<bank id>/``. Inside the layout but owned by no bank
(``layout.owner`` is None for it), the trash is read and written by no API, page or job, and listings
skip it (a dot-name); the operator empties it at the shell (docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from portability.paths.fs import Location, move_to
from portability.paths.layout import BANKS_DIR, bank_parts
from portability.paths.rules import PathNotAllowed

TRASH_DIR = ".trash"


def trash_parts(bank_id: str, at: datetime) -> tuple[str, ...]:
    """Where the bank's folder goes (components below a root): one dated folder per deletion."""
    return (BANKS_DIR, TRASH_DIR, at.strftime("%Y%m%dT%H%M%S%fZ"), *bank_parts(bank_id)[1:])


def bank_folder_set_aside(roots: Sequence[Path], bank_id: str, at: datetime) -> list[Location]:
    """Move the bank's folder out of the way in every root that has one; returns where each went.
    A root whose folder is missing is skipped; a symlink in the way is refused (left as it is)."""
    moved = []
    for root in roots:
        source = Location(root, bank_parts(bank_id))
        target = Location(root, trash_parts(bank_id, at))
        try:
            if source.kind() != "dir":
                continue
            move_to(source, target)
        except PathNotAllowed:
            continue  # a root or folder that is a symlink (never followed), or a name taken meanwhile
        moved.append(target)
    return moved


__all__ = ["TRASH_DIR", "bank_folder_set_aside", "trash_parts"]
