"""Writing below a root, by descriptor: whole files through a temporary name, uploads received a piece at
a time, scratch files, and directory exports.

Files are written under a temporary name in the target's own folder and renamed (or linked) into place
by descriptor, so the final name only ever holds a complete file and nothing is ever written outside the
bank's folder, /tmp included. A directory export is built beside its target and replaces only an earlier
directory export (marked by ``MARKER``) or an empty folder, never a root, a bank's folder or a folder
holding anything else.
"""

from __future__ import annotations

import gzip
import io
import os
import secrets
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from portability.paths.fs import DIR_FLAGS, READ_FLAGS, Location, check_part, lstat_mode, opened_dir
from portability.paths.rules import PathNotAllowed

MARKER = ".memoryhub-export"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _temp_name(name: str, suffix: str) -> str:
    return f".{name[:40]}.{secrets.token_hex(6)}{suffix}"


@contextmanager
def atomic_write(where: Location, mode: str = "w", *, replace: bool = True) -> Iterator[IO[Any]]:
    """Write ``where`` through a temporary file in its own directory (0600): flush, fsync, rename by
    descriptor, fsync the directory. The final name only ever holds a complete file; on any exception the
    temporary file is removed and ``where`` is left as it was. Without ``replace`` an existing file is
    refused, atomically (an upload never takes the name of a file already there). ``.gz`` compresses."""
    if mode not in ("w", "wb"):
        raise ValueError("atomic_write mode must be 'w' or 'wb'")
    if not where.parts:
        raise PathNotAllowed("a root is a directory; give a file name inside it", "not_a_file")
    with opened_dir(where.parent, create=True) as parent:
        existing = lstat_mode(parent, where.name)
        if existing is not None and stat.S_ISDIR(existing):
            raise PathNotAllowed(f"{where.shown} is a directory; give a file name inside it", "not_a_file")
        if existing is not None and not replace:
            raise PathNotAllowed(f"{where.shown} already exists", "exists")
        temp = _temp_name(where.name, ".tmp")
        fd = os.open(temp, _CREATE, 0o600, dir_fd=parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as raw:
                fd = -1
                with _maybe_gzip(raw, where.name.lower().endswith(".gz")) as binary:
                    if mode == "w":
                        text = io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
                        yield text
                        text.flush()
                        text.detach()
                    else:
                        yield binary
                raw.flush()
                os.fsync(raw.fileno())
            if replace:
                os.replace(temp, where.name, src_dir_fd=parent, dst_dir_fd=parent)
            else:
                try:
                    os.link(temp, where.name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
                except FileExistsError:
                    raise PathNotAllowed(f"{where.shown} already exists", "exists") from None
                os.unlink(temp, dir_fd=parent)
            os.fsync(parent)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            try:
                os.unlink(temp, dir_fd=parent)
            except FileNotFoundError:
                pass
            raise


@contextmanager
def _maybe_gzip(raw: IO[bytes], compress: bool) -> Iterator[IO[bytes]]:
    """A ``.gz`` target is written gzip-compressed (no name or time in the gzip header: same bank, same bytes)."""
    if not compress:
        yield raw
        return
    with gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as compressed:
        yield compressed  # type: ignore[misc]


@contextmanager
def spool_beside(where: Location) -> Iterator[IO[str]]:
    """A nameless scratch file (text, read-write) in ``where``'s own directory, gone when closed: a
    writer's temporary data stays inside the bank's directory, never in the machine's /tmp."""
    with opened_dir(where.parent, create=True) as parent:
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600, dir_fd=parent)
        except OSError:  # a filesystem without O_TMPFILE: a named file, unlinked at once
            temp = _temp_name(where.name, ".tmp")
            fd = os.open(temp, _CREATE | os.O_RDWR, 0o600, dir_fd=parent)
            os.unlink(temp, dir_fd=parent)
    with os.fdopen(fd, "w+", encoding="utf-8") as spool:
        yield spool


class PendingFile:
    """A file received a piece at a time (an upload), kept under a temporary name inside ``folder`` (made
    if missing) until ``keep`` puts it in place without taking an existing name, or ``discard`` drops it."""

    def __init__(self, folder: Location) -> None:
        self.folder = folder
        with opened_dir(folder, create=True) as fd:
            self.parent = os.dup(fd)
        self.temp = _temp_name("upload", ".tmp")
        try:
            self.fp: IO[bytes] | None = os.fdopen(os.open(self.temp, _CREATE, 0o600, dir_fd=self.parent), "wb")
        except BaseException:
            os.close(self.parent)
            raise
        self.size = 0

    def write(self, data: bytes) -> None:
        assert self.fp is not None, "the file was kept or discarded already"
        self.fp.write(data)
        self.size += len(data)

    def keep(self, where: Location) -> None:
        """Put the file at ``where``: linked in place when it is in the same folder, else copied there
        (another root) through ``atomic_write``; an existing name is refused either way."""
        assert self.fp is not None, "the file was kept or discarded already"
        self.fp.flush()
        os.fsync(self.fp.fileno())
        self.fp.close()
        self.fp = None
        if where.parent == self.folder:
            try:
                os.link(self.temp, where.name, src_dir_fd=self.parent, dst_dir_fd=self.parent, follow_symlinks=False)
            except FileExistsError:
                raise PathNotAllowed(f"{where.shown} already exists", "exists") from None
            os.fsync(self.parent)
            return
        with os.fdopen(os.open(self.temp, READ_FLAGS, dir_fd=self.parent), "rb") as source, \
                atomic_write(where, "wb", replace=False) as out:
            shutil.copyfileobj(source, out)

    def discard(self) -> None:
        """Remove the temporary file (after ``keep`` too: the kept name is a link of its own)."""
        if self.parent < 0:
            return
        if self.fp is not None:
            self.fp.close()
            self.fp = None
        try:
            os.unlink(self.temp, dir_fd=self.parent)
        except FileNotFoundError:
            pass
        os.close(self.parent)
        self.parent = -1


class DirectoryWriter:
    """Writes files below a directory held open by descriptor (a directory export being built)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write_text(self, parts: Sequence[str], text: str) -> None:
        *folders, name = [check_part(p) for p in parts]
        fd = os.dup(self.fd)
        try:
            for folder in folders:
                try:
                    os.mkdir(folder, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                following = os.open(folder, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = following
            out = os.open(name, _CREATE, 0o600, dir_fd=fd)
            with os.fdopen(out, "w", encoding="utf-8", newline="") as fp:
                fp.write(text)
        finally:
            os.close(fd)


def _earlier_export(parent: int, name: str) -> bool:
    """True when ``name`` is a directory an export made (it holds the marker), or an empty directory."""
    fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    try:
        entries = os.listdir(fd)
        if not entries:
            return True
        mode = lstat_mode(fd, MARKER)
        return mode is not None and stat.S_ISREG(mode)
    finally:
        os.close(fd)


@contextmanager
def directory_export(where: Location) -> Iterator[DirectoryWriter]:
    """A directory built as ``.<name>.<random>.partial`` beside ``where`` and renamed into place when
    complete; an existing ``where`` is replaced only if it is an earlier directory export or empty."""
    if not where.parts:
        raise PathNotAllowed("a directory export cannot replace a root; name a folder inside it", "layout")
    with opened_dir(where.parent, create=True) as parent:
        existing = lstat_mode(parent, where.name)
        if existing is not None and not stat.S_ISDIR(existing):
            raise PathNotAllowed(f"{where.shown} exists and is not a directory", "exists")
        if existing is not None and not _earlier_export(parent, where.name):
            raise PathNotAllowed(f"{where.shown} holds files that are not an earlier export; choose a new "
                                 "folder name", "exists")
        partial = _temp_name(where.name, ".partial")
        os.mkdir(partial, 0o700, dir_fd=parent)
        try:
            fd = os.open(partial, DIR_FLAGS, dir_fd=parent)
            try:
                DirectoryWriter(fd).write_text([MARKER], "A directory export of MemoryHub; a new export of "
                                               "the same name replaces this folder.\n")
                yield DirectoryWriter(fd)
            finally:
                os.close(fd)
            old = None
            if lstat_mode(parent, where.name) is not None:
                old = _temp_name(where.name, ".partial")
                os.rename(where.name, old, src_dir_fd=parent, dst_dir_fd=parent)
            os.rename(partial, where.name, src_dir_fd=parent, dst_dir_fd=parent)
            os.fsync(parent)
            if old is not None:
                shutil.rmtree(old, dir_fd=parent, ignore_errors=True)
        except BaseException:
            shutil.rmtree(partial, dir_fd=parent, ignore_errors=True)
            raise


__all__ = ["MARKER", "DirectoryWriter", "PendingFile", "atomic_write", "directory_export", "spool_beside"]
