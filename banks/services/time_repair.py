"""Find and repair stored times that no reader can show (UTC outside years 1..9999).

Before times were normalised at every edge, a retain with ``0001-01-01T00:00:00+14:00``
stored a year-0 timestamp: PostgreSQL keeps it, Python cannot read it back, and every page
and recall of that bank failed. The repair keeps the original value as text (in the memory's
metadata) and puts a readable time in its place. It runs from ``manage.py check_banks``; the memory
rows are repaired by their owner (``memory_rows.rows_times_repair``). Migration ``0004`` ran the same
repair once, from a frozen copy of its SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from banks.services.memory_rows import rows_times_repair
from memoryhub.input_rules import EARLIEST, LATEST

_OUT = "({col} < %(earliest)s OR {col} > %(latest)s)"


@dataclass(frozen=True)
class TimeRepair:
    table: str
    column: str
    label: str


REPAIRS: tuple[TimeRepair, ...] = (
    TimeRepair("banks_memory", "occurred_at", "memory occurred_at (cleared, original kept in metadata)"),
    TimeRepair("banks_memory", "created_at", "memory created_at (set to retained_at, original kept in metadata)"),
    TimeRepair("banks_memory", "retained_at", "memory retained_at (set to now)"),
    TimeRepair("banks_observationevidence", "evidence_at", "observation evidence time (set to when it was attached)"),
)


@dataclass
class TimeRepairFinding:
    label: str
    rows: int
    bank_ids: list[str]


def out_of_range_times(cursor: Any, *, repair: bool) -> list[TimeRepairFinding]:
    """Count (and with ``repair`` fix) the rows of each repairable column, on the caller's cursor."""
    params = {"earliest": EARLIEST, "latest": LATEST}
    findings = []
    for item in REPAIRS:
        qualified = _OUT.format(col=f"t.{item.column}")
        bank_join = ("JOIN banks_bank b ON b.id = t.bank_id" if item.table == "banks_memory" else
                     "JOIN banks_observation o ON o.id = t.observation_id JOIN banks_bank b ON b.id = o.bank_id")
        # Table and column names come from the REPAIRS constant above, never from input.
        cursor.execute(f"SELECT b.bank_id, count(*) FROM {item.table} t {bank_join} "  # noqa: S608
                       f"WHERE {qualified} GROUP BY b.bank_id", params)
        rows = cursor.fetchall()
        if not rows:
            continue
        if repair and item.table == "banks_memory":
            rows_times_repair(cursor, item.column, EARLIEST, LATEST)
        elif repair:
            cursor.execute(f"UPDATE banks_observationevidence SET evidence_at = attached_at "  # noqa: S608
                           f"WHERE {_OUT.format(col=item.column)}", params)
        findings.append(TimeRepairFinding(item.label, sum(r[1] for r in rows), sorted(r[0] for r in rows)))
    return findings
