from __future__ import annotations

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle


class TokenRateThrottle(SimpleRateThrottle):
    """Per-token request rate (MEMORYHUB_RATE_LIMIT, e.g. ``6000/min``); 429 with retry_after."""

    scope = "token"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if request.auth is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}
