"""Small server-rendered SVG charts (no JavaScript, no inline styles). Every value is escaped."""

from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString


def bar_chart(values: list[int], labels: list[str] | None = None, *, width: int = 560, height: int = 120,
              title: str = "") -> SafeString:
    if not values:
        return format_html("")
    top = max(values) or 1
    step = width / len(values)
    bars = format_html_join("", '<rect x="{}" y="{}" width="{}" height="{}" fill="#1f5fbf"><title>{}: {}</title></rect>', (
        (f"{i * step + 1:.1f}", f"{height - (height - 16) * v / top:.1f}", f"{max(step - 2, 1):.1f}",
         f"{(height - 16) * v / top:.1f}", labels[i] if labels else i, v)
        for i, v in enumerate(values)))
    return format_html('<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>{}</svg>',
                       width, height, title, title, bars)


def sparkline(values: list[int], *, width: int = 120, height: int = 24) -> SafeString:
    if not values:
        return format_html("")
    top = max(values) or 1
    step = width / max(len(values) - 1, 1)
    points = " ".join(f"{i * step:.1f},{height - 2 - (height - 4) * v / top:.1f}" for i, v in enumerate(values))
    return format_html('<svg class="spark" viewBox="0 0 {} {}" role="img" aria-label="memories retained per day">'
                       '<polyline fill="none" stroke="#1f5fbf" stroke-width="1.5" points="{}"/></svg>',
                       width, height, points)
