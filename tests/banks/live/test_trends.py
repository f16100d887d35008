from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from banks.live.trends import compute_trend, trend_timeline

T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def ago(days: float) -> datetime:
    return T - timedelta(days=days)


@pytest.mark.parametrize(
    ("days", "trend"),
    [
        ([], "stale"),
        ([1, 10], "new"),
        ([100], "stale"),
        ([30], "stale"),  # exactly 30 days is not strictly newer than the cutoff
        ([29, 31], "strengthening"),  # 1/30 against 1/60: ratio 2.0
        ([5, 60], "strengthening"),
        ([1, 100, 120, 150, 200], "stable"),  # ratio exactly 0.5 is not < 0.5
        ([2, 40, 50], "stable"),  # ratio 1.0
        ([1, 40, 45, 50, 60, 70], "weakening"),  # 1/30 against 5/60: ratio 0.4
        ([1, 2, 3, 40], "strengthening"),
        ([29.99, 90], "strengthening"),  # exactly 90 days counts as middle
    ],
)
def test_astrocyte_worked_examples_and_boundaries(days, trend):
    assert compute_trend([ago(d) for d in days], now=T) == trend


def test_ratio_exactly_one_and_a_half_is_stable():
    # 3 recent / 30 against 4 older / 60 = 0.1 / 0.0667 = 1.5: not strictly above.
    assert compute_trend([ago(d) for d in (1, 2, 3, 40, 50, 60, 70)], now=T) == "stable"


def test_naive_times_are_utc_and_strings_are_parsed():
    naive = (T - timedelta(days=1)).replace(tzinfo=None)
    assert compute_trend([naive, "2026-05-30T00:00:00Z"], now=T) == "new"
    assert compute_trend(["not a date", None], now=T) == "stale"
    assert compute_trend(["2026-05-31T12:00:00+00:00", "garbage"], now=T) == "new"


def test_timeline_counts_per_week_oldest_first():
    counts = trend_timeline([ago(1), ago(2), ago(8), ago(400)], now=T, buckets=4)
    assert counts == [0, 0, 1, 2]
