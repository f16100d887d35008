from __future__ import annotations

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from banks.services.rate_limits import rate_count


class TokenRateThrottle(SimpleRateThrottle):
    """Per-token request rate (MEMORYHUB_RATE_LIMIT, e.g. ``6000/min``); 429 with retry_after.

    Counted atomically and shared by every web process (banks.services.rate_limits): a window opens
    at a token's first request, allows ``num_requests`` and ends ``duration`` seconds later.
    """

    scope = "token"
    resets_in: float = 0.0
    # Set by SimpleRateThrottle.__init__ from the rate; the stubs do not declare them.
    num_requests: int | None
    duration: int | None

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if request.auth is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}

    def allow_request(self, request: Request, view: object) -> bool:
        if self.rate is None or self.num_requests is None or self.duration is None:
            return True
        key = self.get_cache_key(request, view)
        if key is None:
            return True
        counted = rate_count(key=key, period=self.duration)
        if counted is None:
            return True
        self.resets_in = counted.resets_in
        return counted.count <= self.num_requests

    def wait(self) -> float | None:
        return max(self.resets_in, 0.001)


def token_request_wait(token_id: int) -> float | None:
    """Count one request of a token outside DRF (the MCP endpoint) against the same budget, under the
    same key, as its REST and agent-tool requests: None if it may go on, else seconds to wait."""
    throttle = TokenRateThrottle()
    if throttle.rate is None or throttle.num_requests is None or throttle.duration is None:
        return None
    counted = rate_count(key=throttle.cache_format % {"scope": throttle.scope, "ident": token_id},
                         period=throttle.duration)
    if counted is None or counted.count <= throttle.num_requests:
        return None
    return max(counted.resets_in, 0.001)
