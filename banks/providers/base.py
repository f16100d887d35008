from __future__ import annotations

from typing import Any

import httpx


class ProviderError(Exception):
    """A provider failed; the API answers 503 naming the provider."""

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(message)
        self.provider = provider


class ProviderTimeout(ProviderError):
    pass


def post_json(provider: str, url: str, payload: dict[str, Any], *, api_key: str, timeout: float) -> dict[str, Any]:
    """POST to an OpenAI-compatible endpoint with a hard timeout; never hangs a web worker."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        response = httpx.post(url, json=payload, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise ProviderTimeout(provider, f"{provider} did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise ProviderError(provider, f"{provider} is unreachable: {exc}") from None
    if response.status_code >= 400:
        raise ProviderError(provider, f"{provider} answered HTTP {response.status_code}: {response.text[:300]}")
    try:
        body = response.json()
    except ValueError:
        raise ProviderError(provider, f"{provider} answered with a body that is not JSON") from None
    if not isinstance(body, dict):
        raise ProviderError(provider, f"{provider} answered with an unexpected JSON shape")
    return body
