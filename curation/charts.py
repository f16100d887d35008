"""Small server-rendered SVG charts (no JavaScript, no inline styles)."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe


def bar_chart(values: list[int], labels: list[str] | None = None, *, width: int = 560, height: int = 120,
              title: str = "") -> SafeString:
    if not values:
        return mark_safe("")
    top = max(values) or 1
    step = width / len(values)
    bars = []
    for i, value in enumerate(values):
        h = round((height - 16) * value / top, 1)
        label = escape(labels[i]) if labels else str(i)
        bars.append(f'<rect x="{i * step + 1:.1f}" y="{height - h:.1f}" width="{max(step - 2, 1):.1f}" '
                    f'height="{h}" fill="#1f5fbf"><title>{label}: {value}</title></rect>')
    return mark_safe(
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        f'<title>{escape(title)}</title>{"".join(bars)}</svg>')


def sparkline(values: list[int], *, width: int = 120, height: int = 24) -> SafeString:
    if not values:
        return mark_safe("")
    top = max(values) or 1
    step = width / max(len(values) - 1, 1)
    points = " ".join(f"{i * step:.1f},{height - 2 - (height - 4) * v / top:.1f}" for i, v in enumerate(values))
    return mark_safe(f'<svg class="spark" viewBox="0 0 {width} {height}" role="img" aria-label="activity">'
                     f'<polyline fill="none" stroke="#1f5fbf" stroke-width="1.5" points="{points}"/></svg>')
