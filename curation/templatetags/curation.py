"""Template helpers for the operator pages: one date format, record-id URLs, numbers people read."""

from __future__ import annotations

import json
from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()


@register.filter
def when(value: datetime | None, empty: str = "—") -> str:
    """``2026-11-23 14:05 CET`` in the operator's time zone, machine-readable in ``datetime``."""
    if not isinstance(value, datetime):
        return empty
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    return format_html('<time datetime="{}">{}</time>', value.isoformat(), local.strftime("%Y-%m-%d %H:%M %Z").strip())


@register.filter
def day(value: datetime | None, empty: str = "—") -> str:
    if not isinstance(value, datetime):
        return empty
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    return format_html('<time datetime="{}">{}</time>', value.isoformat(), local.strftime("%Y-%m-%d"))


@register.filter
def as_json(value: object) -> str:
    """A stored JSON value as JSON (double quotes, true/false/null), indented: what an API client sends
    and gets back, not Python's repr. Escaped by the template like any text."""
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{int(value * 100)}%"


@register.filter
def approx(value: int | None) -> str:
    """``about 20,000`` for estimates: two significant figures."""
    if value is None:
        return "—"
    if value < 1000:
        return f"about {value:,}"  # still an estimate: never shown as if it were exact
    digits = len(str(int(value))) - 2
    return f"about {round(value, -digits):,}"


_WOULD = {"imported": "would import", "updated": "would update", "overwritten": "would overwrite",
          "skipped": "would skip", "conflicts": "would conflict", "links": "would link"}


@register.simple_tag
def job_count_label(key: str, dry_run: bool) -> str:
    """A preview has changed nothing yet: it says what the import *would* do."""
    return _WOULD.get(key, key) if dry_run else key
