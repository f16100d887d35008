"""Every file operation below a root, through directory descriptors.

A path that passed the rules is not opened by name again: its root is opened once and every component
below it is opened relative to the previous one with ``O_NOFOLLOW`` (``openat``), so a folder swapped
for a symlink after the check fails the open instead of redirecting it. Files are read only when they
are regular files with one link on the root's device (a hard link to a file outside would otherwise be
read through the root). Writing is in ``writes``.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from portability.paths.rules import PathNotAllowed

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def check_part(part: str) -> str:
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
            check_part(part)

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
        return Location(self.root, (*self.parts, check_part(name)))

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
        """The file's or folder's own status (a symlink is refused, never followed)."""
        if not self.parts:
            fd = _open_root(self.root)
            try:
                return os.fstat(fd)
            finally:
                os.close(fd)
        try:
            with opened_dir(self.parent) as parent:
                info = os.stat(self.name, dir_fd=parent, follow_symlinks=False)
        except OSError as exc:
            raise _refuse(exc, self) from None
        if stat.S_ISLNK(info.st_mode):
            raise PathNotAllowed(f"{self.shown} is a symlink; symlinks are not followed", "symlink")
        return info


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
                if stat.S_ISLNK(lstat_mode(fd, part) or 0):
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
        return os.open(part, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(part, 0o700, dir_fd=fd)
    except FileExistsError:
        pass
    return os.open(part, DIR_FLAGS, dir_fd=fd)


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
            fd = os.open(where.name, READ_FLAGS, dir_fd=parent)
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


def lstat_mode(parent: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None

def move_to(source: Location, target: Location) -> None:
    """Move a file or folder to ``target`` under the same root (made if missing), by descriptor, never
    over an existing name."""
    if not source.parts or not target.parts or source.root != target.root:
        raise PathNotAllowed("only a file or folder inside a root moves, and only within that root", "layout")
    with opened_dir(source.parent) as here, opened_dir(target.parent, create=True) as there:
        if lstat_mode(there, target.name) is not None:
            raise PathNotAllowed(f"{target.shown} already exists", "exists")
        mode = lstat_mode(here, source.name)
        if mode is None or stat.S_ISLNK(mode):
            raise PathNotAllowed(f"{source.shown} is missing or a symlink", "not_a_file")
        if stat.S_ISREG(mode):
            try:  # a link refuses an existing name atomically; the old name goes once the new one is there
                os.link(source.name, target.name, src_dir_fd=here, dst_dir_fd=there, follow_symlinks=False)
            except FileExistsError:
                raise PathNotAllowed(f"{target.shown} already exists", "exists") from None
            os.unlink(source.name, dir_fd=here)
        else:
            os.rename(source.name, target.name, src_dir_fd=here, dst_dir_fd=there)
        os.fsync(there)

def walk_files(where: Location, suffix: str) -> Iterator[Location]:
    """Regular files ending in ``suffix`` below ``where``, in sorted order, skipping dot-names and
    never entering or yielding a symlink."""
    with opened_dir(where) as top:
        for folder, dirs, files, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                             and stat.S_ISDIR(lstat_mode(fd, d) or 0))
            prefix = tuple(p for p in folder.split("/") if p not in ("", "."))
            for name in sorted(files):
                if name.endswith(suffix) and not name.startswith(".") and stat.S_ISREG(lstat_mode(fd, name) or 0):
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

__all__ = ["DIR_FLAGS", "READ_FLAGS", "Location", "check_part", "list_entries", "lstat_mode", "move_to", "open_file_fd", "opened_dir", "remove_stale_temporaries",
           "root_device", "walk_files"]
