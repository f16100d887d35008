"""The one function that decides every filesystem path import, export, upload and download touch.

Order (Astrocyte's, section 2.4 of its portability rules): reject control
characters first; resolve the path, following symlinks; take roots from the
call, else MEMORYHUB_PORTABILITY_ROOTS, else ASTROCYTE_PORTABILITY_ROOTS (split
on the OS path separator); with no roots, only an explicitly uncontained trusted
caller gets through. Everything is decided before any file is opened.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

ENV_ROOTS = ("MEMORYHUB_PORTABILITY_ROOTS", "ASTROCYTE_PORTABILITY_ROOTS")
MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

CONTAINMENT_REQUIRED = (
    "Portability path containment is required. Provide one of:\n"
    "  - allowed_roots=[<dir>, ...] kwarg, OR\n"
    "  - MEMORYHUB_PORTABILITY_ROOTS (or ASTROCYTE_PORTABILITY_ROOTS) environment variable "
    "(os.pathsep-joined directories), OR\n"
    "  - allow_uncontained=True for trusted internal callers."
)


class PathNotAllowed(ValueError):
    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def configured_roots(env: Mapping[str, str] | None = None) -> list[Path]:
    source = os.environ if env is None else env
    for name in ENV_ROOTS:
        raw = source.get(name, "")
        parts = [p for p in raw.split(os.pathsep) if p]
        if parts:
            return [Path(p).expanduser().resolve() for p in parts]
    return []


def _resolve(path: str) -> Path:
    try:
        return Path(path).expanduser().resolve()
    except (RuntimeError, OSError) as exc:
        raise PathNotAllowed(f"Portability path cannot be resolved: {path!r} ({exc})", "unresolvable") from None


def resolve_contained(
    path: str | os.PathLike[str],
    *,
    allowed_roots: Sequence[str | os.PathLike[str]] | None = None,
    allow_uncontained: bool = False,
    env: Mapping[str, str] | None = None,
) -> Path:
    text = os.fspath(path)
    if not isinstance(text, str):
        raise PathNotAllowed("Portability path must be text", "control_character")
    bad = _CONTROL.search(text)
    if bad:
        raise PathNotAllowed(f"Portability path contains illegal control character: {bad.group()!r}",
                             "control_character")
    if not text:
        raise PathNotAllowed("Portability path is empty", "unresolvable")
    if len(text) > MAX_PATH_CHARS or any(len(part.encode("utf-8")) > MAX_COMPONENT_BYTES
                                          for part in text.split(os.sep)):
        raise PathNotAllowed(
            f"Portability path is too long (at most {MAX_PATH_CHARS} characters and {MAX_COMPONENT_BYTES} bytes "
            "a name)", "too_long")
    resolved = _resolve(text)
    if allowed_roots:
        roots = [_resolve(os.fspath(r)) for r in allowed_roots]
    else:
        roots = configured_roots(env)
    if not roots:
        if allow_uncontained:
            return resolved
        raise PathNotAllowed(CONTAINMENT_REQUIRED, "containment_required")
    for root in roots:
        # Component-wise: /data/exports-evil is not inside /data/exports.
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    raise PathNotAllowed(
        f"Portability path escapes allowed roots: {resolved} not in {[str(r) for r in roots]}", "escapes_roots")


def sanitize_upload_name(name: str) -> str:
    """A safe file name from what a browser sent: last component only, no dot files, a bounded length."""
    base = re.split(r"[/\\]", name or "")[-1]
    base = _CONTROL.sub("", base)
    base = _UNSAFE_NAME.sub("_", base).lstrip("._")
    base = base[:200]
    if not base or base in {".", ".."}:
        raise PathNotAllowed(f"Upload file name {name!r} has nothing usable in it", "unresolvable")
    return base
