"""What an import checks of each line of an archive, and the report it gives back (pure: no database).

One list of a line's rules (``line_problem``) serves the strict pre-pass and the batch writer
(``portability.services.importer``), so a strict import refuses exactly the lines a plain one would leave
out, before anything is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from portability.formats.ama import parse_iso
from portability.observation_records import is_observation, observation_problem
from portability.records import MemoryRecord, RecordError, RecordSkipped, record_problem

ON_CONFLICT = ("skip", "overwrite", "error")
MAX_ERRORS_REPORTED = 1000


@dataclass
class ImportReport:
    dry_run: bool = False
    strict: bool = False
    on_conflict: str = "skip"
    lines: int = 0
    imported: int = 0
    overwritten: int = 0
    skipped: int = 0
    duplicates: int = 0
    conflicts: int = 0
    invalid: int = 0
    links: int = 0
    observations: int = 0
    unresolved_links: int = 0
    entity_links: int = 0
    forgotten: int = 0
    archived: int = 0
    resumed_after: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    aborted: str | None = None

    def note(self, position: Any, reason: str) -> None:
        if len(self.errors) < MAX_ERRORS_REPORTED:
            self.errors.append({"line": position, "reason": reason})

    def counts(self) -> dict[str, int]:
        return {"lines": self.lines, "imported": self.imported, "overwritten": self.overwritten,
                "skipped": self.skipped, "duplicates": self.duplicates, "conflicts": self.conflicts,
                "invalid": self.invalid, "links": self.links, "observations": self.observations,
                "unresolved_links": self.unresolved_links, "entity_links": self.entity_links,
                "forgotten": self.forgotten, "archived": self.archived}

    def astrocyte_result(self) -> dict[str, int]:
        """Astrocyte's ImportResult numbers: stored, not stored, failed."""
        return {"imported": self.imported + self.overwritten + self.observations,
                "skipped": self.skipped + self.duplicates,
                "errors": self.invalid + (self.conflicts if self.on_conflict == "error" else 0)}


def id_key(memory_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(memory_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def created_from_metadata(record: MemoryRecord) -> None:
    """Astrocyte keeps a memory's creation time as ``metadata._created_at``: use it rather than invent one."""
    raw = (record.metadata or {}).get("_created_at")
    if record.created_at is None and isinstance(raw, str):
        record.created_at = parse_iso(raw)


def line_problem(item: MemoryRecord | RecordError, seen_ids: dict[int, Any]) -> str | None:
    """Why this line cannot be stored, or None (then its id is remembered in ``seen_ids``).

    The one list of a line's rules: the strict pre-pass and the batch writer both ask it, so a strict
    import refuses exactly the lines a plain one would leave out, before anything is written."""
    if isinstance(item, RecordError):
        return item.reason
    created_from_metadata(item)
    if not item.text.strip():
        return "empty text"
    if (problem := record_problem(item)) is not None:
        return problem
    if is_observation(item) and (problem := observation_problem(item)) is not None:
        return problem
    if item.memory_id:
        key = id_key(item.memory_id)
        if (earlier := seen_ids.get(key)) is not None:
            return f"memory_id '{item.memory_id}' repeats line {earlier}"
        seen_ids[key] = item.position
    return None


def strict_check(items: Iterable[MemoryRecord | RecordError]) -> ImportReport:
    """Every line of the archive asked ``line_problem``, nothing written: the strict pre-pass."""
    check = ImportReport()
    seen: dict[int, Any] = {}
    for item in items:
        check.lines += 1
        if isinstance(item, RecordSkipped):
            continue
        if (problem := line_problem(item, seen)) is not None:
            check.invalid += 1
            check.note(item.position, problem)
    return check


__all__ = ["MAX_ERRORS_REPORTED", "ON_CONFLICT", "ImportReport", "created_from_metadata", "id_key", "line_problem",
           "strict_check"]
