"""How an API token looks and how its secret is kept: ``mh_<prefix>_<secret>``, stored as a SHA-256 hash.

Pure, so that minting (banks.services.tokens) and checking (banks.api.auth) read one rule."""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "mh_"  # noqa: S105  (a public marker, not a secret)


def hash_secret(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_plaintext(prefix: str) -> str:
    """A new token for ``prefix``: shown once, then only its hash is kept."""
    return f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"


def split_token(raw: str) -> tuple[str, str] | None:
    """``mh_<prefix>_<secret>`` → (prefix, full token)."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    prefix, sep, secret = raw[len(TOKEN_PREFIX):].partition("_")
    if not sep or not prefix or not secret or len(prefix) > 16:
        return None
    return prefix, raw
