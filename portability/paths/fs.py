"""Every file operation below a root, through directory descriptors.

A path that passed the rules is not opened by name again: its root is opened once and every component
below it is opened relative to the previous one with ``O_NOFOLLOW`` (``openat``), so a folder swapped
for a symlink after the check fails the open instead of redirecting it. Files are read only when they
are regular files with one link on the root's device (a hard link to a file outside would otherwise be
read through the root); files are written under a temporary name in the same directory and renamed by
descriptor; a directory export is built beside its target and replaces only an earlier directory export
(marked by ``MARKER``), never a root, a bank's directory or a folder holding anything else.
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
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from portability.paths.rules import PathNotAllowed

MARKER = ".memoryhub-export"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _check_part(part: str) -> str:
    if not part or part in (".", "..") or "/" in part or "\x00" in part:
        raise PathNotAllowed(f"Portability path has an unusable component {part!r}", "deceptive_segment")
    return part


@dataclass(frozen=True)
class Location:
    """A place below ``root`` (absolute, resolved): ``parts`` are the components, never ``.``/``..``."""

    root: Path
    parts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for part in self.parts:
            _check_part(part)

    @property
    def path(self) -> Path:
        """The absolute path, for job parameters and answers; never opened by name."""
        return self.root.joinpath(*self.parts)

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else self.root.name

    @property
    def shown(self) -> str:
        """The path relative to its root: what error messages name (the server's own paths stay private)."""
        return "/".join(self.parts) or "."

    @property
    def parent(self) -> Location:
        return Location(self.root, self.parts[:-1])

    def __truediv__(self, name: str) -> Location:
        return Location(self.root, (*self.parts, _check_part(name)))

    def kind(self) -> str:
        """``missing``, ``file``, ``dir``, ``symlink`` or ``other``, without following anything."""
        if not self.parts:
            return "dir"
        try:
            with opened_dir(self.parent) as fd:
                mode = os.stat(self.name, dir_fd=fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return "missing"
        if stat.S_ISLNK(mode):
            return "symlink"
        return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"

    def exists(self) -> bool:
        return self.kind() != "missing"

    def is_dir(self) -> bool:
        return self.kind() == "dir"

    def is_file(self) -> bool:
        return self.kind() == "file"

    def open(self, mode: str = "r", *, encoding: str | None = None, newline: str | None = None,
             errors: str | None = None) -> IO[Any]:
        """Open for reading (``r`` or ``rb``) a regular file with one link; nothing else is read."""
        if mode not in ("r", "rb"):
            raise ValueError("a Location opens for reading only; write through atomic_write")
        fd = open_file_fd(self)
        if mode == "rb":
            return os.fdopen(fd, "rb")
        return os.fdopen(fd, "r", encoding=encoding or "utf-8", newline=newline, errors=errors)

    def read_text(self, encoding: str = "utf-8") -> str:
        with self.open("r", encoding=encoding) as fp:
            return fp.read()

    def read_bytes(self) -> bytes:
        with self.open("rb") as fp:
            return fp.read()

    def stat(self) -> os.stat_result:
        fd = open_file_fd(self)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)


def _refuse(exc: OSError, where: Location) -> PathNotAllowed:
    if isinstance(exc, FileNotFoundError):
        return PathNotAllowed(f"no such file or directory: {where.shown}", "missing")
    if isinstance(exc, NotADirectoryError):
        return PathNotAllowed(f"{where.shown} is not a directory", "not_a_directory")
    if exc.errno == 40:  # ELOOP: O_NOFOLLOW met a symlink
        return PathNotAllowed(f"{where.shown} goes through a symlink; symlinks are not followed", "symlink")
    return PathNotAllowed(f"{where.shown}: {exc.strerror or exc.__class__.__name__}", "unresolvable")


def _open_root(root: Path) -> int:
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise PathNotAllowed(f"the portability root {root.name!r} cannot be opened "
                             f"({exc.strerror or exc.__class__.__name__})", "unresolvable") from None


@contextmanager
def opened_dir(where: Location, *, create: bool = False) -> Iterator[int]:
    """A descriptor on ``where``, opened component by component without following a symlink; with
    ``create`` missing folders are made (0700). Closed on exit."""
    fd = _open_root(where.root)
    try:
        for index, part in enumerate(where.parts):
            try:
                following = _open_child(fd, part, create)
            except OSError as exc:
                if isinstance(exc, FileNotFoundError) and not create:
                    raise
                reached = Location(where.root, where.parts[:index + 1])
                if stat.S_ISLNK(_lstat_mode(fd, part) or 0):
                    raise PathNotAllowed(f"{reached.shown} is a symlink; symlinks are not followed",
                                         "symlink") from None
                raise _refuse(exc, reached) from None
            os.close(fd)
            fd = following
    except BaseException:
        os.close(fd)
        raise
    try:
        yield fd
    finally:
        os.close(fd)


def _open_child(fd: int, part: str, create: bool) -> int:
    try:
        return os.open(part, _DIR, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(part, 0o700, dir_fd=fd)
    except FileExistsError:
        pass
    return os.open(part, _DIR, dir_fd=fd)


def root_device(where: Location) -> int:
    fd = _open_root(where.root)
    try:
        return os.fstat(fd).st_dev
    finally:
        os.close(fd)


def open_file_fd(where: Location) -> int:
    """A read descriptor on a regular file with a single link, on the root's own device."""
    if not where.parts:
        raise PathNotAllowed("a root is a directory, not a file", "not_a_file")
    try:
        with opened_dir(where.parent) as parent:
            fd = os.open(where.name, _READ, dir_fd=parent)
    except OSError as exc:
        raise _refuse(exc, where) from None
    info = os.fstat(fd)
    problem = None
    if stat.S_ISDIR(info.st_mode):
        problem = PathNotAllowed(f"{where.shown} is a directory, not a file", "not_a_file")
    elif not stat.S_ISREG(info.st_mode):
        problem = PathNotAllowed(f"{where.shown} is not a regular file", "not_a_file")
    elif info.st_nlink > 1:
        problem = PathNotAllowed(f"{where.shown} has {info.st_nlink} hard links; a linked file is not read",
                                 "hard_link")
    elif info.st_dev != root_device(where):
        problem = PathNotAllowed(f"{where.shown} is on another device than its root", "hard_link")
    if problem is not None:
        os.close(fd)
        raise problem
    os.set_blocking(fd, True)
    return fd


def _lstat_mode(parent: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


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
        existing = _lstat_mode(parent, where.name)
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
        with os.fdopen(os.open(self.temp, _READ, dir_fd=self.parent), "rb") as source, \
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
        *folders, name = [_check_part(p) for p in parts]
        fd = os.dup(self.fd)
        try:
            for folder in folders:
                try:
                    os.mkdir(folder, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                following = os.open(folder, _DIR, dir_fd=fd)
                os.close(fd)
                fd = following
            out = os.open(name, _CREATE, 0o600, dir_fd=fd)
            with os.fdopen(out, "w", encoding="utf-8", newline="") as fp:
                fp.write(text)
        finally:
            os.close(fd)


def _earlier_export(parent: int, name: str) -> bool:
    """True when ``name`` is a directory an export made (it holds the marker), or an empty directory."""
    fd = os.open(name, _DIR, dir_fd=parent)
    try:
        entries = os.listdir(fd)
        if not entries:
            return True
        mode = _lstat_mode(fd, MARKER)
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
        existing = _lstat_mode(parent, where.name)
        if existing is not None and not stat.S_ISDIR(existing):
            raise PathNotAllowed(f"{where.shown} exists and is not a directory", "exists")
        if existing is not None and not _earlier_export(parent, where.name):
            raise PathNotAllowed(f"{where.shown} holds files that are not an earlier export; choose a new "
                                 "folder name", "exists")
        partial = _temp_name(where.name, ".partial")
        os.mkdir(partial, 0o700, dir_fd=parent)
        try:
            fd = os.open(partial, _DIR, dir_fd=parent)
            try:
                DirectoryWriter(fd).write_text([MARKER], "A directory export of MemoryHub; a new export of "
                                               "the same name replaces this folder.\n")
                yield DirectoryWriter(fd)
            finally:
                os.close(fd)
            old = None
            if _lstat_mode(parent, where.name) is not None:
                old = _temp_name(where.name, ".partial")
                os.rename(where.name, old, src_dir_fd=parent, dst_dir_fd=parent)
            os.rename(partial, where.name, src_dir_fd=parent, dst_dir_fd=parent)
            os.fsync(parent)
            if old is not None:
                shutil.rmtree(old, dir_fd=parent, ignore_errors=True)
        except BaseException:
            shutil.rmtree(partial, dir_fd=parent, ignore_errors=True)
            raise


def walk_files(where: Location, suffix: str) -> Iterator[Location]:
    """Regular files ending in ``suffix`` below ``where``, in sorted order, skipping dot-names and
    never entering or yielding a symlink."""
    with opened_dir(where) as top:
        for folder, dirs, files, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and stat.S_ISDIR(_lstat_mode(fd, d) or 0))
            prefix = tuple(p for p in folder.split("/") if p not in ("", "."))
            for name in sorted(files):
                if name.endswith(suffix) and not name.startswith(".") and stat.S_ISREG(_lstat_mode(fd, name) or 0):
                    yield Location(where.root, (*where.parts, *prefix, name))


def list_entries(where: Location, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` entries of a directory (no dot-names, no symlinks), newest first."""
    entries: list[dict[str, Any]] = []
    try:
        with opened_dir(where) as fd, os.scandir(fd) as it:
            for entry in it:
                if entry.name.startswith(".") or entry.is_symlink():
                    continue
                info = entry.stat(follow_symlinks=False)
                entries.append({"name": entry.name, "location": where / entry.name, "size": info.st_size,
                                "is_dir": stat.S_ISDIR(info.st_mode), "mtime": info.st_mtime})
                if len(entries) >= limit:
                    break
    except (OSError, PathNotAllowed):
        return []
    return sorted(entries, key=lambda e: -e["mtime"])


def remove_stale_temporaries(where: Location, cutoff: float) -> int:
    """Remove ``.*.tmp`` files and ``.*.partial`` directories below ``where`` older than ``cutoff``."""
    removed = 0
    try:
        with opened_dir(where) as top:
            for _folder, dirs, files, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
                for name in [*dirs, *files]:
                    if not name.startswith(".") or not name.endswith((".tmp", ".partial")):
                        continue
                    try:
                        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        if info.st_mtime > cutoff:
                            continue
                        if stat.S_ISDIR(info.st_mode):
                            shutil.rmtree(name, dir_fd=fd)
                            dirs.remove(name)
                        else:
                            os.unlink(name, dir_fd=fd)
                        removed += 1
                    except FileNotFoundError:
                        continue
    except (FileNotFoundError, PathNotAllowed):
        return removed
    return removed


__all__ = ["MARKER", "DirectoryWriter", "Location", "PendingFile", "atomic_write", "directory_export", "list_entries",
           "open_file_fd", "opened_dir", "remove_stale_temporaries", "spool_beside", "walk_files"]
