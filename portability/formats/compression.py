"""Gzip-compressed archives, recognised by their magic bytes rather than their name.

Reading is streamed, and the decompressed size is capped: a small file that
inflates without end (a zip bomb) stops with a clear error instead of filling the
disk or memory.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import IO, cast

GZIP_MAGIC = b"\x1f\x8b"


class ArchiveTooLarge(ValueError):
    pass


def is_gzip(path: Path) -> bool:
    if path.is_dir():
        return False
    with path.open("rb") as fp:
        return fp.read(2) == GZIP_MAGIC


class _Capped(io.RawIOBase):
    """A readable stream that refuses to yield more than ``cap`` bytes of its source."""

    def __init__(self, source: IO[bytes], cap: int, name: str) -> None:
        self.source, self.cap, self.name, self.seen = source, cap, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        try:
            data = self.source.read(len(buffer))
        except (OSError, EOFError) as exc:
            raise ValueError(f"{self.name} holds damaged gzip data: {exc or 'it ends too early'}") from None
        self.seen += len(data)
        if self.seen > self.cap:
            raise ArchiveTooLarge(f"{self.name} decompresses to more than {self.cap} bytes; refusing to read on")
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.source.close()
        super().close()


def open_archive_bytes(path: Path, cap: int) -> IO[bytes]:
    """The archive's bytes: decompressed (and capped at ``cap``) when it is gzip, as stored otherwise."""
    if is_gzip(path):
        try:
            source = cast(IO[bytes], gzip.open(path, "rb"))  # a GzipFile is a binary stream
            return io.BufferedReader(_Capped(source, cap, path.name), buffer_size=1 << 16)
        except OSError as exc:
            raise ValueError(f"{path.name} is not a readable gzip file: {exc}") from None
    return path.open("rb")
