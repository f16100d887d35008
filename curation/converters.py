"""Record ids in curation URLs.

Memory and mental-model ids are whatever the API accepted: ``note:Archive/Priya Raman``, ids with
spaces, ``?``, ``#`` or ``%`` in them. Most travel as they are (``reverse()`` percent-encodes what
needs it and ``/`` stays a path separator the route absorbs). A few shapes a browser or a proxy
would rewrite before the request reaches us — a ``.``/``..`` or empty path segment, a backslash,
whitespace or control characters — and ids that already start with ``~`` travel as ``~`` followed by
their UTF-8 bytes in unpadded base64url, which no browser touches.
"""

from __future__ import annotations

import base64
import binascii

MARK = "~"


def _needs_wrapping(value: str) -> bool:
    if not value or value.startswith(MARK):
        return True
    if any(segment in {"", ".", ".."} for segment in value.split("/")):
        return True
    return any(ch == "\\" or ch.isspace() and ch != " " or ord(ch) < 32 or ord(ch) == 127 for ch in value)


def encode_record_id(value: str) -> str:
    if not _needs_wrapping(value):
        return value
    return MARK + base64.urlsafe_b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii").rstrip("=")


def decode_record_id(value: str) -> str:
    if not value.startswith(MARK):
        return value
    raw = value[len(MARK):]
    try:
        return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode("utf-8", "surrogatepass")
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        # A ValueError makes the route not match: the request is a plain 404.
        raise ValueError("not a record id") from exc


class RecordIdConverter:
    # One or more path segments: the fixed suffix of each route (``/``, ``/edit``...) ends the id.
    regex = ".+"

    def to_python(self, value: str) -> str:
        return decode_record_id(value)

    def to_url(self, value: str) -> str:
        return encode_record_id(str(value))
