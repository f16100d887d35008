"""Lifecycle rules (pure): what a bank's policy says to do with one memory today.

As Astrocyte: delete when the memory is older than ``delete_after_days`` (counted from its
creation); archive when ``archive_after_days`` have passed since it was last recalled, else since
its creation; a fact type may override either number; a memory carrying an exempt tag is kept.
A legal hold keeps what would be deleted; archiving loses nothing and goes ahead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

KEEP, ARCHIVE, DELETE = "keep", "archive", "delete"
MAX_DAYS = 36_500


class PolicyError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


@dataclass(frozen=True)
class Policy:
    delete_after_days: int | None = None
    archive_after_days: int | None = None
    fact_type_overrides: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    exempt_tags: frozenset[str] = frozenset()

    def days(self, fact_type: str, key: str) -> int | None:
        override = self.fact_type_overrides.get(fact_type, {})
        return override[key] if key in override else getattr(self, key)


def _days(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DAYS:
        raise PolicyError(name, f"must be a whole number of days between 0 and {MAX_DAYS}, or null")
    return value


def policy_from(*, delete_after_days: Any = None, archive_after_days: Any = None,
                fact_type_overrides: Any = None, exempt_tags: Any = None) -> Policy:
    """A checked policy; every problem names its field."""
    overrides: dict[str, dict[str, int | None]] = {}
    if fact_type_overrides is not None and not isinstance(fact_type_overrides, Mapping):
        raise PolicyError("fact_type_overrides", "must be an object of fact type -> {archive_after_days, "
                                                 "delete_after_days}")
    for fact_type, values in (fact_type_overrides or {}).items():
        where = f"fact_type_overrides.{fact_type}"
        if not isinstance(values, Mapping):
            raise PolicyError(where, "must be an object")
        unknown = set(values) - {"archive_after_days", "delete_after_days"}
        if unknown:
            raise PolicyError(where, f"unknown key {sorted(unknown)[0]!r}")
        overrides[str(fact_type)] = {k: _days(v, f"{where}.{k}") for k, v in values.items()}
    if exempt_tags is not None and (not isinstance(exempt_tags, list | tuple)
                                    or not all(isinstance(t, str) for t in exempt_tags)):
        raise PolicyError("exempt_tags", "must be a list of strings")
    return Policy(delete_after_days=_days(delete_after_days, "delete_after_days"),
                  archive_after_days=_days(archive_after_days, "archive_after_days"),
                  fact_type_overrides=overrides, exempt_tags=frozenset(exempt_tags or ()))


def decide(policy: Policy, *, now: datetime, created_at: datetime, last_recalled_at: datetime | None,
           fact_type: str, tags: Iterable[str], archived: bool, held: bool) -> tuple[str, str]:
    """``(action, reason)`` for one live memory."""
    exempt = sorted(policy.exempt_tags.intersection(tags))
    if exempt:
        return KEEP, f"exempt tag {exempt[0]}"
    delete_after = policy.days(fact_type, "delete_after_days")
    if delete_after is not None and now - created_at >= timedelta(days=delete_after):
        if held:
            return KEEP, "legal hold"
        return DELETE, f"older than {delete_after} days"
    archive_after = policy.days(fact_type, "archive_after_days")
    since = last_recalled_at or created_at
    if not archived and archive_after is not None and now - since >= timedelta(days=archive_after):
        basis = "last recall" if last_recalled_at else "creation"
        return ARCHIVE, f"{archive_after} days since {basis}"
    return KEEP, "within policy"


__all__ = ["ARCHIVE", "DELETE", "KEEP", "Policy", "PolicyError", "decide", "policy_from"]
