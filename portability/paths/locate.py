"""From a path given as text to a ``Location``: the rules first, then the root that holds it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from portability.paths.fs import Location
from portability.paths.rules import PathNotAllowed, resolve_contained, root_of


def _anchored(path: Path) -> Location:
    """An uncontained path (a trusted caller without roots): anchored at the deepest existing folder
    above it, so its own name and any folders still to be made are opened by descriptor."""
    anchor = path.parent
    while not anchor.is_dir() and anchor != anchor.parent:
        anchor = anchor.parent
    if path == path.parent:
        return Location(path, ())
    return Location(anchor, path.relative_to(anchor).parts)


def as_location(path: Path | Location) -> Location:
    """``path`` itself when it is a Location; a plain path (a trusted internal caller) is resolved first."""
    if isinstance(path, Location):
        return path
    return _anchored(Path(path).expanduser().resolve())


def locate(path: str | os.PathLike[str], *, roots: Sequence[str | os.PathLike[str]], allow_uncontained: bool = False) -> Location:
    """Check ``path`` with the rules, resolve it and place it below the innermost root holding it."""
    resolved = resolve_contained(path, allowed_roots=list(roots) or None, allow_uncontained=allow_uncontained,
                                 env={})
    root = root_of(resolved, [Path(r).expanduser().resolve() for r in roots]) if roots else None
    if root is None:
        return _anchored(resolved)
    return Location(root, resolved.relative_to(root).parts)


def locate_stored(path: str, *, roots: Sequence[Path]) -> Location:
    """A path this server resolved and stored earlier (a queued job's): placed below its root by its text
    alone. Nothing is resolved again, so a symlink put in its way since is refused when it is opened."""
    candidate = Path(os.path.normpath(path))
    root = root_of(candidate, roots) if candidate.is_absolute() else None
    if root is None:
        raise PathNotAllowed("Portability path escapes allowed roots (a stored path outside every root)",
                             "escapes_roots")
    return Location(root, candidate.relative_to(root).parts)


__all__ = ["as_location", "locate", "locate_stored"]
