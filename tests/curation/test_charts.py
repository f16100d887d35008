"""Chart axis labels fit their margin (pure: no database)."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest

from curation.charts import day_chart

CHAR_WIDTH = 7.0  # an 11 px digit or comma, generously (.chart text in app.css)


@pytest.mark.parametrize("peak", [3, 950, 4_200, 23_456, 99_999, 1_400_000])
def test_every_y_label_starts_inside_the_picture(peak):
    days = [date(2026, 1, 1) + timedelta(days=i) for i in range(30)]
    svg = str(day_chart(days, [peak if i == 10 else 1 for i in range(30)], title="Retained", unit="memories"))
    labels = re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end">([^<]+)</text>', svg)
    y_labels = [(float(x), text) for x, text in labels if not re.search(r"[A-Za-z]{3} \d\d", text)]
    assert len(y_labels) == 3
    for x, text in y_labels:
        assert x - CHAR_WIDTH * len(text) >= 0, (text, x)


def test_big_ticks_are_short_and_exact_ones_keep_their_separators():
    from curation.charts import axis_label

    assert [axis_label(v) for v in (0, 950, 2_500, 25_000, 12_500, 1_500_000)] == [
        "0", "950", "2,500", "25k", "12.5k", "1.5M"]
