"""Pure rules for memory content: normalisation, hashing, ids, token estimates, metadata hygiene."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import uuid
from typing import Any

_SPACE = re.compile(r"\s+")
# Astrocyte drops these metadata keys (case-insensitive) so secrets are not memorised.
BLOCKED_METADATA_KEYS = frozenset({"api_key", "password", "token", "secret"})


def normalise_text(text: str) -> str:
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(text: str) -> str:
    """SHA-256 of the normalised text: equal for texts that differ only in spacing."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def new_memory_id() -> str:
    # Same shape as Astrocyte's ids: 16 lowercase hex characters.
    return uuid.uuid4().hex[:16]


def estimate_tokens(text: str) -> int:
    """A provider-free token estimate (about four characters a token)."""
    return max(1, (len(text) + 3) // 4)


def clean_metadata(metadata: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Drop blocked keys; return the cleaned metadata and the names dropped."""
    if not metadata:
        return {}, []
    dropped = [k for k in metadata if str(k).lower() in BLOCKED_METADATA_KEYS]
    return {k: v for k, v in metadata.items() if k not in dropped}, dropped


def metadata_size(metadata: dict[str, Any]) -> int:
    return len(json.dumps(metadata, default=str, ensure_ascii=False).encode("utf-8"))
