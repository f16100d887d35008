"""Small server-rendered SVG charts (no JavaScript, no inline styles). Every value is escaped.

A chart has axes, dates and values a person can read without hovering; the hover titles only
repeat the exact numbers. An all-zero series is not drawn: the caller shows an empty state.
"""

from __future__ import annotations

from datetime import date, datetime

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe


def _n(value: float) -> str:
    return f"{value:.1f}"


# The width of one character of an axis label (11 px text, .chart text in app.css), generously: a label
# must fit in the left margin, never run off the picture ("25,000" read ",5,000").
CHAR_WIDTH = 7.0


def axis_label(value: int) -> str:
    """A tick value, short enough for the margin: 950, 2,500, 25k, 1.5M."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}".rstrip("0").rstrip(".") + "M"
    if value >= 10_000:
        return f"{value / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{value:,}"


def axis_margin(labels: list[str]) -> int:
    """The left margin that holds the longest label right-aligned 6 px before the axis."""
    return max(40, int(CHAR_WIDTH * max(len(label) for label in labels)) + 12)


def _nice_top(value: int) -> int:
    """The y axis ends on a round number at or above the largest bar."""
    if value <= 5:
        return max(value, 1)
    magnitude = 10 ** (len(str(value)) - 1)
    for step in (1, 2, 2.5, 5, 10):
        top = int(step * magnitude)
        if top >= value:
            return top
    return value


def day_chart(days: list[date], values: list[int], *, title: str, unit: str, css: str = "bar",
              width: int = 560, height: int = 170) -> SafeString:
    """Bars per day with a y axis (0, middle, top), date labels about weekly and the total in the label."""
    if not values or not any(values):
        return mark_safe("")
    top = _nice_top(max(values))
    tick_values = sorted({0, top // 2, top})
    left, bottom, top_pad = axis_margin([axis_label(t) for t in tick_values]), 22, 8
    plot_w, plot_h = width - left - 6, height - bottom - top_pad
    step = plot_w / len(values)
    bars = format_html_join("", '<rect class="{}" x="{}" y="{}" width="{}" height="{}"><title>{}: {} {}</title></rect>', (
        (css, _n(left + i * step + 1), _n(top_pad + plot_h - plot_h * v / top), _n(max(step - 2, 1)),
         _n(plot_h * v / top), days[i].isoformat(), v, unit) for i, v in enumerate(values) if v))
    ticks = format_html_join("", '<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/><text x="{}" y="{}" '
                                 'text-anchor="end">{}</text>', (
        (left - 3, _n(top_pad + plot_h - plot_h * t / top), width - 6, _n(top_pad + plot_h - plot_h * t / top),
         left - 6, _n(top_pad + plot_h - plot_h * t / top + 4), axis_label(t)) for t in tick_values))
    every = max(1, round(len(days) / 5))
    labels = format_html_join("", '<text x="{}" y="{}" text-anchor="{}">{}</text>', (
        (_n(left + i * step + step / 2), height - 6,
         "end" if i == len(days) - 1 else ("start" if i == 0 else "middle"), d.strftime("%b %d"))
        for i, d in enumerate(days) if (i % every == 0 and len(days) - 1 - i >= every / 2) or i == len(days) - 1))
    total = sum(values)
    peak = max(range(len(values)), key=lambda i: values[i])
    summary = (f"{title}: {total:,} {unit} from {days[0].isoformat()} to {days[-1].isoformat()}, "
               f"most on {days[peak].isoformat()} ({values[peak]:,})")
    return format_html('<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>{}{}{}</svg>',
                       width, height, summary, summary, ticks, bars, labels)


def evidence_strip(times: list[datetime], *, width: int = 220, height: int = 30) -> SafeString:
    """One tick per evidence item between the first and the last evidence date, labelled at both ends."""
    points = sorted(t for t in times if t is not None)
    if not points:
        return mark_safe("")
    first, last = points[0], points[-1]
    span = (last - first).total_seconds() or 1.0
    pad = 4
    ticks = format_html_join("", '<line class="tick" x1="{}" y1="4" x2="{}" y2="16"><title>{}</title></line>', (
        (_n(pad + (width - 2 * pad) * ((t - first).total_seconds() / span if len(points) > 1 else 0.5)),) * 2
        + (t.date().isoformat(),) for t in points))
    label = (f"{len(points)} evidence item{'s' if len(points) != 1 else ''} from {first.date().isoformat()}"
             f" to {last.date().isoformat()}")
    return format_html('<svg class="strip" viewBox="0 0 {} {}" role="img" aria-label="{}">'
                       '<line class="axis" x1="{}" y1="10" x2="{}" y2="10"/>{}'
                       '<text x="{}" y="{}">{}</text><text x="{}" y="{}" text-anchor="end">{}</text></svg>',
                       width, height, label, pad, width - pad, ticks, pad, height - 2, first.strftime("%Y-%m-%d"),
                       width - pad, height - 2, last.strftime("%Y-%m-%d") if len(points) > 1 else "")


def sparkline(values: list[int], *, width: int = 120, height: int = 24) -> SafeString:
    if not values or not any(values):
        return mark_safe('<span class="muted">none</span>')
    top = max(values) or 1
    step = width / max(len(values) - 1, 1)
    points = " ".join(f"{i * step:.1f},{height - 2 - (height - 4) * v / top:.1f}" for i, v in enumerate(values))
    return format_html('<svg class="spark" viewBox="0 0 {} {}" role="img" aria-label="{} memories retained in the '
                       'last {} days"><polyline fill="none" stroke-width="1.5" points="{}"/></svg>',
                       width, height, sum(values), len(values), points)


def bar_chart(values: list[int], labels: list[str] | None = None, *, width: int = 560, height: int = 120,
              title: str = "") -> SafeString:
    """Kept for callers outside the curation pages: plain bars with titles."""
    if not values or not any(values):
        return mark_safe("")
    top = max(values) or 1
    step = width / len(values)
    bars = format_html_join("", '<rect class="bar" x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>', (
        (_n(i * step + 1), _n(height - (height - 16) * v / top), _n(max(step - 2, 1)), _n((height - 16) * v / top),
         labels[i] if labels else i, v) for i, v in enumerate(values)))
    return format_html('<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>{}</svg>',
                       width, height, title, title, bars)
