"""Webhook signatures (pure). Each source signs one of two ways, chosen per source:

* ``timestamped`` (the default): ``X-Webhook-Signature: sha256=HMAC(secret, "<timestamp>.<raw body>")``
  with ``X-Webhook-Timestamp`` in epoch seconds, accepted within a time window; the service also
  refuses the same signature twice, so a captured request cannot be replayed.
* ``body``: ``sha256=HMAC(secret, <raw body>)`` in one header, ``X-Astrocyte-Signature`` unless the
  source names another (``X-Hub-Signature-256`` for GitHub-style senders). This is what Astrocyte's
  gateway checks: the prefix is optional, hex case does not matter. It carries no time, so it cannot
  tell a replay from a second identical event; a source that can sign with a timestamp should.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

TOLERANCE_SECONDS = 300
TIMESTAMPED = "timestamped"
BODY = "body"
SCHEMES = (TIMESTAMPED, BODY)
DEFAULT_BODY_HEADER = "X-Astrocyte-Signature"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"
SIGNATURE_HEADER = "X-Webhook-Signature"


class BadSignature(ValueError):
    pass


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def sign_body(secret: str, body: bytes) -> str:
    """Astrocyte's signature: ``sha256=`` and the HMAC-SHA256 of the raw body."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify(secret: str, *, timestamp: str | None, signature: str | None, body: bytes, now: float,
           tolerance: int = TOLERANCE_SECONDS) -> str:
    """The verified signature, or BadSignature saying what is wrong."""
    if not timestamp or not signature:
        raise BadSignature(f"{TIMESTAMP_HEADER} and {SIGNATURE_HEADER} headers are required")
    if not timestamp.isdigit():
        raise BadSignature(f"{TIMESTAMP_HEADER} must be epoch seconds")
    if abs(now - int(timestamp)) > tolerance:
        raise BadSignature(f"timestamp outside the {tolerance} s window (replay or clock skew)")
    if not hmac.compare_digest(sign(secret, timestamp, body), signature.strip()):
        raise BadSignature("signature does not match")
    return signature.strip()


def verify_body(secret: str, *, signature: str | None, body: bytes, header: str = DEFAULT_BODY_HEADER) -> None:
    """Check a body-only signature (``sha256=<hex>`` or bare hex), or raise BadSignature."""
    if not signature or not signature.strip():
        raise BadSignature(f"{header} header is required")
    got = signature.strip()
    if got[:7].lower() == "sha256=":
        got = got[7:].strip()
    expected = sign_body(secret, body)[7:]
    if not hmac.compare_digest(expected, got.lower()):
        raise BadSignature("signature does not match")


def verify_delivery(secret: str, *, scheme: str, headers: Mapping[str, str], body: bytes, now: float,
                    body_header: str = DEFAULT_BODY_HEADER) -> str | None:
    """Verify a delivery the way its source signs. Returns the signature to record against replays
    (timestamped scheme), or None when the scheme has no notion of a replay (body scheme)."""
    if scheme == BODY:
        verify_body(secret, signature=headers.get(body_header or DEFAULT_BODY_HEADER), body=body,
                    header=body_header or DEFAULT_BODY_HEADER)
        return None
    if scheme != TIMESTAMPED:
        raise BadSignature(f"unknown signature scheme {scheme!r}")
    return verify(secret, timestamp=headers.get(TIMESTAMP_HEADER), signature=headers.get(SIGNATURE_HEADER),
                  body=body, now=now)


__all__ = ["BODY", "DEFAULT_BODY_HEADER", "SCHEMES", "TIMESTAMPED", "TOLERANCE_SECONDS", "BadSignature", "sign",
           "sign_body", "verify", "verify_body", "verify_delivery"]
