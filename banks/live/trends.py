"""Observation trends from evidence timestamps (Astrocyte's algorithm, same constants).

recent = evidence strictly newer than 30 days; old = strictly older than 90 days;
middle = in between (both ends included). No recent evidence → stale; only
recent → new; otherwise compare the recent density (per 30 days) with the older
density (per 60 days, even for evidence older than 90 days): above 1.5 →
strengthening, below 0.5 → weakening, else stable. Computed at read time.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

RECENT_DAYS = 30
OLD_DAYS = 90
OLDER_SPAN_DAYS = OLD_DAYS - RECENT_DAYS
STRENGTHENING_RATIO = 1.5
WEAKENING_RATIO = 0.5
TIMELINE_BUCKET_DAYS = 7
TRENDS = ("new", "strengthening", "stable", "weakening", "stale")


def as_utc(value: datetime | str | None) -> datetime | None:
    """An aware datetime (naive means UTC), or None for anything unusable."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def compute_trend(timestamps: Sequence[datetime | str | None], now: datetime | None = None) -> str:
    now = as_utc(now) or datetime.now(UTC)
    times = [t for t in (as_utc(v) for v in timestamps) if t is not None]
    if not times:
        return "stale"
    recent_cutoff = now - timedelta(days=RECENT_DAYS)
    old_cutoff = now - timedelta(days=OLD_DAYS)
    recent = [t for t in times if t > recent_cutoff]
    old = [t for t in times if t < old_cutoff]
    middle = [t for t in times if old_cutoff <= t <= recent_cutoff]
    if not recent:
        return "stale"
    if not old and not middle:
        return "new"
    recent_density = len(recent) / RECENT_DAYS
    older_density = (len(old) + len(middle)) / OLDER_SPAN_DAYS
    if older_density == 0:
        return "new"
    ratio = recent_density / older_density
    if ratio > STRENGTHENING_RATIO:
        return "strengthening"
    if ratio < WEAKENING_RATIO:
        return "weakening"
    return "stable"


def trend_timeline(timestamps: Sequence[datetime | str | None], now: datetime | None = None,
                   buckets: int = 26) -> list[int]:
    """Evidence counts per week, oldest first, the last bucket being the 7 days up to ``now``.

    Evidence in the future or before the first bucket is not counted.
    """
    now = as_utc(now) or datetime.now(UTC)
    counts = [0] * max(buckets, 0)
    span = timedelta(days=TIMELINE_BUCKET_DAYS)
    for value in timestamps:
        t = as_utc(value)
        if t is None or t > now:
            continue
        week = (now - t) // span
        if week < len(counts):
            counts[len(counts) - 1 - week] += 1
    return counts
