"""Webhook signatures (pure): HMAC-SHA256 over "<timestamp>.<raw body>", within a time window."""

from __future__ import annotations

import hashlib
import hmac

TOLERANCE_SECONDS = 300


class BadSignature(ValueError):
    pass


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def verify(secret: str, *, timestamp: str | None, signature: str | None, body: bytes, now: float,
           tolerance: int = TOLERANCE_SECONDS) -> str:
    """The verified signature, or BadSignature saying what is wrong."""
    if not timestamp or not signature:
        raise BadSignature("X-Webhook-Timestamp and X-Webhook-Signature headers are required")
    if not timestamp.isdigit():
        raise BadSignature("X-Webhook-Timestamp must be epoch seconds")
    if abs(now - int(timestamp)) > tolerance:
        raise BadSignature(f"timestamp outside the {tolerance} s window (replay or clock skew)")
    if not hmac.compare_digest(sign(secret, timestamp, body), signature.strip()):
        raise BadSignature("signature does not match")
    return signature.strip()


__all__ = ["TOLERANCE_SECONDS", "BadSignature", "sign", "verify"]
