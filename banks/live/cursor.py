"""The changes feed's opaque cursor (pure): the last change a client has seen, as (time, row id)."""

from __future__ import annotations

import base64
import binascii
from datetime import datetime


class BadCursor(ValueError):
    pass


def encode_cursor(changed_at: datetime, row_id: int) -> str:
    raw = f"v1|{changed_at.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        version, when, row_id = raw.split("|")
        changed_at = datetime.fromisoformat(when)
        if version != "v1" or changed_at.tzinfo is None:
            raise ValueError(raw)
        return changed_at, int(row_id)
    except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
        raise BadCursor("not a cursor this server issued") from exc


__all__ = ["BadCursor", "decode_cursor", "encode_cursor"]
