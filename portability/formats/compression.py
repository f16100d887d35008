"""Gzip-compressed archives, recognised by their magic bytes rather than their name.

Reading is streamed, and the decompressed size is capped: a small file that
inflates without end (a zip bomb) stops with a clear error instead of filling the
disk or memory.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path
from typing import IO

from portability.paths import Location, as_location

GZIP_MAGIC = b"\x1f\x8b"


class ArchiveTooLarge(ValueError):
    pass


def is_gzip(path: Path | Location) -> bool:
    where = as_location(path)
    if where.is_dir():
        return False
    with where.open("rb") as fp:
        return fp.read(2) == GZIP_MAGIC


class _Capped(io.RawIOBase):
    """A readable stream that refuses to yield more than ``cap`` bytes of its source."""

    def __init__(self, source: IO[bytes], cap: int, name: str, under: IO[bytes] | None = None) -> None:
        # ``under``: the file a GzipFile reads from, which closing the GzipFile leaves open.
        self.source, self.cap, self.name, self.seen, self.under = source, cap, name, 0, under

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
        if self.under is not None:
            self.under.close()
        super().close()


def open_archive_bytes(path: Path | Location, cap: int) -> IO[bytes]:
    """The archive's bytes: decompressed (and capped at ``cap``) when it is gzip, as stored otherwise.
    Opened once, by descriptor: the magic bytes and the content come from the same file."""
    where = as_location(path)
    raw = where.open("rb")
    if raw.read(2) != GZIP_MAGIC:
        raw.seek(0)
        return raw
    raw.seek(0)
    source = gzip.GzipFile(fileobj=raw, mode="rb")  # a GzipFile is a binary stream
    return io.BufferedReader(_Capped(source, cap, where.name, under=raw),  # type: ignore[arg-type]
                             buffer_size=1 << 16)



def read_document(path: Path | Location, max_bytes: int) -> bytes:
    """A whole JSON document's bytes, gzip or not, refused past ``max_bytes`` before anything is parsed:
    a plain file by its size on the open descriptor (nothing read), a gzip file by what it decompresses to
    (reading stops one byte past the cap)."""
    where = as_location(path)
    with open_archive_bytes(where, max_bytes + 1) as fp:
        if not isinstance(fp, io.BufferedReader) or not isinstance(fp.raw, _Capped):
            too_large = os.fstat(fp.fileno()).st_size > max_bytes
            data = b"" if too_large else fp.read()
        else:
            try:
                data = fp.read(max_bytes + 1)
            except ArchiveTooLarge:
                data = b""
                too_large = True
            else:
                too_large = len(data) > max_bytes
    if too_large:
        raise ValueError(f"{where.name} is larger than the {max_bytes} byte limit for JSON documents")
    return data
