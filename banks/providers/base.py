"""What every remote provider call shares: one HTTP POST of JSON, with a hard timeout and a small retry budget.

Embeddings, the chat model and the reranker all go through ``send_json``. A transient failure (HTTP 408,
425, 429 or 5xx, a timeout, a dropped connection) is tried again a few times (tenacity): after the wait
the server's ``Retry-After`` asks for, else after a short exponential, jittered back-off. A server that
asks to wait longer than the budget allows is not retried (its answer is reported at once), and a
client error (400, 401, 404...) never is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import tenacity
from django.conf import settings

# Defined in the kernel, whose error handler answers them with a 503 naming the provider.
from memoryhub.errors import ProviderError, ProviderTimeout

__all__ = ["ProviderError", "ProviderTimeout", "TransientProviderError", "post_json", "send_json"]

RETRIED_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class TransientProviderError(ProviderError):
    """A failure worth trying again: an HTTP status of RETRIED_STATUSES or a dropped connection."""

    def __init__(self, provider: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(provider, message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryBudget:
    """How many times a call is made at most, and the longest single wait between two of them (seconds)."""

    attempts: int = 3
    max_wait: float = 5.0
    # A call that already waited its whole timeout is tried again only where time allows (not inside a recall).
    retry_timeouts: bool = True


def default_budget() -> RetryBudget:
    return RetryBudget(attempts=1 + max(0, settings.MEMORYHUB_PROVIDER_RETRIES),
                       max_wait=settings.MEMORYHUB_PROVIDER_RETRY_MAX_WAIT)


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds from now: delay-seconds or an HTTP date (RFC 9110); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


# The pause between attempts; tests replace it to record the waits instead of sleeping.
sleep = time.sleep


def _post_once(provider: str, url: str, payload: dict[str, Any], headers: dict[str, str], timeout: float) -> Any:
    try:
        response = httpx.post(url, json=payload, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise ProviderTimeout(provider, f"{provider} did not answer within {timeout:g} s") from None
    except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise TransientProviderError(provider, f"{provider} is unreachable: {exc}") from None
    except httpx.HTTPError as exc:
        raise ProviderError(provider, f"{provider} is unreachable: {exc}") from None
    if response.status_code >= 400:
        message = f"{provider} answered HTTP {response.status_code}: {response.text[:300]}"
        if response.status_code in RETRIED_STATUSES:
            raise TransientProviderError(provider, message,
                                         retry_after=retry_after_seconds(response.headers.get("Retry-After")))
        raise ProviderError(provider, message)
    try:
        return response.json()
    except ValueError:
        raise ProviderError(provider, f"{provider} answered with a body that is not JSON") from None


def send_json(provider: str, url: str, payload: dict[str, Any], *, api_key: str, timeout: float,
              budget: RetryBudget | None = None) -> Any:
    """POST ``payload`` and return the decoded JSON answer, retrying transient failures within ``budget``.

    Raises ProviderTimeout / ProviderError (the last attempt's) when no attempt succeeds."""
    budget = budget or default_budget()
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"

    def worth_retrying(exc: BaseException) -> bool:
        if isinstance(exc, ProviderTimeout):
            return budget.retry_timeouts
        if isinstance(exc, TransientProviderError):
            # A server asking for a longer pause than the budget's is answered at once, not hammered.
            return exc.retry_after is None or exc.retry_after <= budget.max_wait
        return False

    backoff = tenacity.wait_exponential_jitter(multiplier=0.2, max=budget.max_wait, jitter=0.2)

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TransientProviderError) and exc.retry_after is not None:
            return exc.retry_after
        return float(backoff(state))

    retrying = tenacity.Retrying(stop=tenacity.stop_after_attempt(max(1, budget.attempts)), wait=wait,
                                 retry=tenacity.retry_if_exception(worth_retrying), reraise=True,
                                 sleep=lambda seconds: sleep(seconds))
    return retrying(_post_once, provider, url, payload, headers, timeout)


def post_json(provider: str, url: str, payload: dict[str, Any], *, api_key: str, timeout: float,
              budget: RetryBudget | None = None) -> dict[str, Any]:
    """``send_json`` for endpoints that answer a JSON object (OpenAI-compatible ones)."""
    body = send_json(provider, url, payload, api_key=api_key, timeout=timeout, budget=budget)
    if not isinstance(body, dict):
        raise ProviderError(provider, f"{provider} answered with an unexpected JSON shape")
    return body
