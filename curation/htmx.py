from __future__ import annotations

from django.http import HttpRequest


def htmx_template(request: HttpRequest, template: str, partial: str) -> str:
    """The page on a normal or boosted request; ``page#partial`` on an HTMX swap."""
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.boosted:
        return f"{template}#{partial}"
    return template


def is_htmx(request: HttpRequest) -> bool:
    htmx = getattr(request, "htmx", None)
    return htmx is not None and bool(htmx) and not htmx.boosted
