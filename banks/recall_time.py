"""Times named in a question ("last June", "two weeks ago", "yesterday", "in May 2023"), as a window.

Pure rules: the window is computed against a reference date (the question's "now"), never
the wall clock, so history questions and benchmarks ask about the past they lived in. A
window gets some slack on both sides because people round ("two weeks ago" is rarely 14 days).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3}
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_AGO = re.compile(r"\b(\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")\s+(day|week|month|year)s?\s+ago\b")
_LAST_UNIT = re.compile(r"\b(last|past|previous|this)\s+(week|month|year|weekend)\b")
_MONTH = re.compile(r"\b(?:(last|this|in|during|since|before|after)\s+)?(" + "|".join(
    sorted((m for m in MONTHS if len(m) > 3 or m == "may"), key=len, reverse=True)) + r")\b(?:\s+(\d{4}))?")
_WEEKDAY = re.compile(r"\b(last|this|on)\s+(" + "|".join(WEEKDAYS) + r")\b")
_ISO = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")


@dataclass(frozen=True)
class TimeWindow:
    start: datetime
    end: datetime
    phrase: str

    def as_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "phrase": self.phrase}


def _day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _window(ref: datetime, start: datetime, end: datetime, slack_days: float, phrase: str) -> TimeWindow:
    slack = timedelta(days=slack_days)
    return TimeWindow(start=start - slack, end=min(end + slack, ref + timedelta(days=1)), phrase=phrase)


def parse_time_window(question: str, reference: datetime) -> TimeWindow | None:
    """The time window the question names, relative to ``reference``; None when it names none."""
    text = question.lower()
    today = _day_start(reference)
    if re.search(r"\byesterday\b", text):
        return _window(reference, today - timedelta(days=1), today, 1, "yesterday")
    if re.search(r"\btoday\b|\bthis morning\b|\btonight\b", text):
        return _window(reference, today, today + timedelta(days=1), 1, "today")
    match = _ISO.search(text)
    if match:
        year, month, day = (int(g) for g in match.groups())
        try:
            day_start = reference.replace(year=year, month=month, day=day, hour=0, minute=0, second=0,
                                          microsecond=0)
        except ValueError:
            day_start = None
        if day_start is not None:
            return _window(reference, day_start, day_start + timedelta(days=1), 2, match.group(0))
    match = _AGO.search(text)
    if match:
        count = int(match.group(1)) if match.group(1).isdigit() else NUMBERS[match.group(1)]
        days = count * UNIT_DAYS[match.group(2)]
        center = today - timedelta(days=days)
        slack = max(2.0, days * 0.25)
        return _window(reference, center, center + timedelta(days=1), slack, match.group(0))
    match = _WEEKDAY.search(text)
    if match:
        back = (today.weekday() - WEEKDAYS[match.group(2)]) % 7 or 7
        day_start = today - timedelta(days=back)
        return _window(reference, day_start, day_start + timedelta(days=1), 1, match.group(0))
    match = _LAST_UNIT.search(text)
    if match:
        which, unit = match.groups()
        span = {"week": 7, "weekend": 3, "month": 30, "year": 365}[unit]
        end = today + timedelta(days=1) if which == "this" else today
        start = today - timedelta(days=span * (1 if which == "this" else 2))
        return _window(reference, start, end, span * 0.1, match.group(0))
    for match in _MONTH.finditer(text):
        which, name, year_text = match.groups()
        if name == "may" and not which and not year_text:
            continue  # "may I ask" is not a month
        month = int(MONTHS[name])
        if year_text:
            chosen_year = int(year_text)
        else:
            # "last June" / "in June": the latest June that has begun by the reference date.
            chosen_year = reference.year if month <= reference.month else reference.year - 1
            if which == "last" and month == reference.month:
                chosen_year -= 1
        first = reference.replace(year=chosen_year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
        last_day = calendar.monthrange(chosen_year, month)[1]
        end = first + timedelta(days=last_day)
        if which == "before":
            return _window(reference, first - timedelta(days=365), first, 0, match.group(0))
        if which in {"after", "since"}:
            return _window(reference, end, reference, 0, match.group(0))
        return _window(reference, first, end, 3, match.group(0))
    return None
