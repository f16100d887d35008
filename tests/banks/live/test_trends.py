"""Observation trends: Astrocyte's worked examples, the window boundaries and input handling."""

from __future__ import annotations

import importlib
import random
from datetime import UTC, datetime, timedelta, timezone

from banks.live import trends
from banks.live.trends import TRENDS, compute_trend, trend_timeline

T = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def ago(days: float) -> datetime:
    return T - timedelta(days=days)


def trend_of(*days: float) -> str:
    return compute_trend([ago(d) for d in days], now=T)


class TestWorkedExamples:
    """Every example listed in astrocyte.md 3.2, with now = T."""

    def test_no_evidence_is_stale(self):
        assert compute_trend([], now=T) == "stale"

    def test_only_recent_evidence_is_new(self):
        assert trend_of(1, 10) == "new"

    def test_only_old_evidence_is_stale(self):
        assert trend_of(100) == "stale"

    def test_exactly_thirty_days_is_not_recent(self):
        assert trend_of(30) == "stale"

    def test_one_recent_one_middle_is_strengthening(self):
        assert trend_of(29, 31) == "strengthening"  # (1/30) / (1/60) = 2.0

    def test_five_and_sixty_days_is_strengthening(self):
        assert trend_of(5, 60) == "strengthening"

    def test_ratio_of_exactly_one_half_is_stable(self):
        assert trend_of(1, 100, 120, 150, 200) == "stable"  # (1/30) / (4/60) = 0.5, not < 0.5

    def test_ratio_of_one_is_stable(self):
        assert trend_of(2, 40, 50) == "stable"


class TestBoundaries:
    def test_a_microsecond_inside_thirty_days_is_recent(self):
        assert compute_trend([T - timedelta(days=30) + timedelta(microseconds=1)], now=T) == "new"

    def test_exactly_thirty_days_counts_as_older_evidence(self):
        # If T-30d were recent this would be "new"; as middle evidence it gives ratio 2.0.
        assert trend_of(1, 30) == "strengthening"

    def test_exactly_ninety_days_counts_as_older_evidence(self):
        assert trend_of(1, 90) == "strengthening"
        assert trend_of(1, 90, 90, 90, 90, 90) == "weakening"  # (1/30) / (5/60) = 0.4

    def test_evidence_beyond_ninety_days_still_divides_by_sixty(self):
        assert trend_of(1, 400) == "strengthening"
        assert trend_of(1, 2, 91, 95) == "strengthening"  # (2/30) / (2/60) = 2.0
        assert trend_of(1, 91, 95, 100) == "stable"  # (1/30) / (3/60) = 0.667

    def test_ratio_just_below_one_half_is_weakening(self):
        assert trend_of(1, 40, 45, 50, 60, 70) == "weakening"  # 0.4

    def test_ratio_of_exactly_one_and_a_half_is_stable(self):
        assert trend_of(1, 2, 3, 40, 50, 60, 70) == "stable"  # (3/30) / (4/60) = 1.5, not > 1.5

    def test_ratio_above_one_and_a_half_is_strengthening(self):
        assert trend_of(1, 2, 3, 4, 40, 50, 60, 70) == "strengthening"  # 2.0

    def test_evidence_in_the_future_counts_as_recent(self):
        assert compute_trend([T + timedelta(days=3)], now=T) == "new"


def test_the_middle_bucket_boundaries_are_inclusive_on_both_ends():
    # Both ends of [now-90d, now-30d] are middle: with one recent item each case is ratio 2.0 → strengthening.
    for days in (30, 60, 90):
        assert trend_of(1, days) == "strengthening"


class TestInputs:
    def test_naive_datetimes_are_utc(self):
        naive_now = T.replace(tzinfo=None)
        assert compute_trend([(T - timedelta(days=30)).replace(tzinfo=None)], now=T) == "stale"
        assert compute_trend([(T - timedelta(days=29)).replace(tzinfo=None)], now=T) == "new"
        assert compute_trend([ago(29)], now=naive_now) == "new"
        assert compute_trend([ago(30)], now=naive_now) == "stale"

    def test_aware_datetimes_in_other_zones_compare_by_instant(self):
        plus_ten = timezone(timedelta(hours=10))
        # 10:00 local at +10 is midnight UTC, so this is T - 30d exactly: not recent.
        exactly_thirty = (T - timedelta(days=30)).astimezone(plus_ten)
        assert compute_trend([exactly_thirty], now=T) == "stale"
        assert compute_trend([exactly_thirty + timedelta(seconds=1)], now=T) == "new"
        assert compute_trend([ago(29)], now=T.astimezone(plus_ten)) == "new"

    def test_iso_strings_are_parsed(self):
        assert compute_trend(["2026-05-30T00:00:00Z"], now=T) == "new"
        assert compute_trend(["2026-05-30T00:00:00+02:00"], now=T) == "new"
        assert compute_trend(["2026-05-30T00:00:00"], now=T) == "new"  # naive string: UTC
        assert compute_trend(["2026-05-02T12:00:00Z"], now=T) == "stale"  # exactly 30 days
        assert compute_trend(["  2026-05-31  "], now=T) == "new"

    def test_unparseable_values_are_ignored(self):
        assert compute_trend(["not a date", None, "", 12345], now=T) == "stale"  # type: ignore[list-item]
        assert compute_trend(["garbage", ago(1).isoformat(), None], now=T) == "new"
        assert compute_trend(["garbage", ago(1), ago(40)], now=T) == "strengthening"

    def test_mixed_strings_naive_and_aware(self):
        values = [ago(1).isoformat(), ago(2).replace(tzinfo=None), ago(40), "2026-03-03"]
        assert compute_trend(values, now=T) == "strengthening"  # (2/30) / (2/60) = 2.0

    def test_now_defaults_to_the_current_time(self):
        assert compute_trend([datetime.now(UTC) - timedelta(days=1)]) == "new"
        assert compute_trend([datetime.now(UTC) - timedelta(days=31)]) == "stale"

    def test_accepts_any_sequence(self):
        assert compute_trend((ago(1), ago(40)), now=T) == "strengthening"


def test_constants_are_astrocytes():
    assert (trends.RECENT_DAYS, trends.OLD_DAYS, trends.OLDER_SPAN_DAYS) == (30, 90, 60)
    assert (trends.STRENGTHENING_RATIO, trends.WEAKENING_RATIO) == (1.5, 0.5)
    assert TRENDS == ("new", "strengthening", "stable", "weakening", "stale")


def test_matches_the_astrocyte_library_on_random_evidence():
    astro = importlib.import_module("astrocyte.pipeline.trend")  # pinned test dependency: never skip
    rng = random.Random(21)
    seen = set()
    for _ in range(3000):
        stamps = [ago(rng.choice([rng.uniform(-2, 250), rng.choice([0, 30, 60, 90, 120])]))
                  for _ in range(rng.randint(0, 9))]
        ours = compute_trend(stamps, now=T)
        theirs = astro.compute_trend(stamps, now=T)
        assert ours == getattr(theirs, "value", theirs), stamps
        seen.add(ours)
    assert seen == set(TRENDS)


class TestTimeline:
    def test_counts_per_week_oldest_first(self):
        assert trend_timeline([ago(1), ago(2), ago(8), ago(400)], now=T, buckets=4) == [0, 0, 1, 2]

    def test_week_boundaries(self):
        assert trend_timeline([ago(0), ago(6.99), ago(7), ago(13.99), ago(14)], now=T, buckets=3) == [1, 2, 2]

    def test_future_old_and_unparseable_evidence_is_not_counted(self):
        values = [T + timedelta(days=1), ago(28), "junk", None, ago(3).isoformat()]
        assert trend_timeline(values, now=T, buckets=4) == [0, 0, 0, 1]

    def test_naive_and_string_times_are_utc(self):
        values = [ago(1).replace(tzinfo=None), "2026-05-31T00:00:00Z"]
        assert trend_timeline(values, now=T, buckets=2) == [0, 2]

    def test_default_is_twenty_six_weeks_ending_now(self):
        counts = trend_timeline([datetime.now(UTC)])
        assert len(counts) == 26 and counts[-1] == 1 and sum(counts) == 1

    def test_zero_buckets_is_empty(self):
        assert trend_timeline([ago(1)], now=T, buckets=0) == []
