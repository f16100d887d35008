"""Bearer-token authentication for /v1 (``Authorization: Bearer`` or ``X-Api-Key``)."""

from __future__ import annotations

import hmac
from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from banks.access import Principal, principal_for_token
from banks.models import ApiToken
from banks.selectors.token_rows import token_row
from banks.token_format import hash_secret, split_token

# Writing last_used_at on every request would turn reads into writes; once a minute is plenty.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_lookup(raw: str) -> ApiToken | None:
    parts = split_token(raw.strip())
    if parts is None:
        return None
    prefix, full = parts
    token = token_row(prefix)
    # Compare even when no row matched, so timing does not tell whether a prefix exists.
    expected = token.secret_hash if token else "0" * 64
    if not hmac.compare_digest(expected, hash_secret(full)) or token is None:
        return None
    return token


class TokenUser:
    """What DRF sees as ``request.user`` for a token: authenticated, carrying the principal."""

    is_authenticated = True
    is_anonymous = False
    is_active = True

    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    def __str__(self) -> str:
        return self.principal.label


class ApiTokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[TokenUser, ApiToken] | None:
        raw = ""
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise AuthenticationFailed("Bearer token or X-Api-Key required")
            raw = value.strip()
        else:
            raw = request.META.get("HTTP_X_API_KEY", "").strip()
        if not raw:
            return None
        token = token_lookup(raw)
        if token is None or token.revoked_at is not None:
            raise AuthenticationFailed("Invalid or revoked token")
        now = timezone.now()
        if token.expires_at is not None and token.expires_at <= now:
            raise AuthenticationFailed("Token expired")
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            # The row may be kept for the next requests (token_rows): they need not write it again.
            token.last_used_at = now
        return TokenUser(principal_for_token(token)), token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="memoryhub"'


def principal_of(request: Any) -> Principal:
    return request.user.principal
