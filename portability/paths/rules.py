"""The rules every filesystem path that import, export, upload and download touch must pass (pure: no I/O
except resolving the path).

Order (Astrocyte 0.22 ``_safe_resolve``): reject control characters first, and
absurdly long paths; resolve the path, following symlinks; take roots from the
call, else ``MEMORYHUB_PORTABILITY_ROOTS``, else ``ASTROCYTE_PORTABILITY_ROOTS``
(split on ``os.pathsep``); with no roots only an explicitly uncontained trusted
caller gets through; with roots the resolved path must be a root or lie under
one, compared component by component. All of it happens before any file is
opened. Tricks are refused, not interpreted: a segment that percent-decodes to ``.``,
``..`` or a separator, dots drawn with look-alike characters or combining marks, and
bidi, format, line-separator or surrogate characters, invisible fillers and variation selectors, spaces
other than the ASCII one, and slashes drawn with look-alike characters. Messages never name the resolved
path or the roots: they are the server's business, and a symlink's target would leak through them.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote

ENV_ROOTS = ("MEMORYHUB_PORTABILITY_ROOTS", "ASTROCYTE_PORTABILITY_ROOTS")
MAX_PATH_CHARS = 4096
MAX_COMPONENT_BYTES = 255
MAX_UPLOAD_NAME_CHARS = 200
# A path deeper than this is refused before anything is created (a thousand nested folders is an attack,
# not an archive).
MAX_SEGMENTS = 64
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_SEPARATORS = re.compile(r"[/\\]")
# Control, format (bidi overrides, zero-width), line/paragraph separators, lone surrogates.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Characters that render as one or two dots: a name made of them reads as "." or "..".
_DOT_LOOKALIKES = frozenset(
    "\u2024\u2025\u2026\ufe52\uff0e\u3002\uff61\u0701\u0702\ua4f8\u2e33\u00b7"  # the first dozen
    "\u0387\u2027\u2219\u22c5\u2e31\u30fb\uff65\u16eb\u0660\u06f0\ua60e\u06d4\ufe12\u2981\u2e30"
    "\u2022\u00b8\u02d9\u0589\u1427\u10fb\u2e3c\ufe19\U00010101\U0001d16d\u0f0b\u1362\u1803\ufe45\ufe46")
# Characters that render as a slash or a backslash.
_SLASH_LOOKALIKES = frozenset("\u2044\u2215\u29f8\uff0f\u2571\u29f5\u2216\uff3c\ufe68\u2572\u3033\u1735")
# Marks that render as nothing (Unicode's default-ignorable code points outside the format category) and
# blanks that look like a space or nothing: a name holding one is not what it looks like.
_INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0\u2800\u00a0\u1680\u2000\u2001"
    "\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000\u2062\u2063\u2064\u2061")


def _invisible(char: str) -> bool:
    code = ord(char)
    # Variation selectors (and their supplement), tag characters and the unassigned ignorables.
    return (char in _INVISIBLE or 0xFE00 <= code <= 0xFE0F or 0xE0000 <= code <= 0xE0FFF
            or 0x1D173 <= code <= 0x1D17A or 0xFFF0 <= code <= 0xFFF8 or 0x1BCA0 <= code <= 0x1BCA3)


CONTAINMENT_REQUIRED = (
    "Portability path containment is required. Provide one of:\n"
    "  - allowed_roots=[<dir>, ...] kwarg, OR\n"
    "  - MEMORYHUB_PORTABILITY_ROOTS or ASTROCYTE_PORTABILITY_ROOTS environment variable "
    "(os.pathsep-joined directories), OR\n"
    "  - allow_uncontained=True for trusted internal callers."
)


class PathNotAllowed(ValueError):
    """A path refused by containment. ``code`` is one of ``control_character``, ``deceptive_segment``,
    ``too_long``, ``unresolvable``, ``containment_required``, ``escapes_roots`` (and, from the
    descriptor-based I/O and the bank layout, ``not_a_file``, ``not_a_directory``, ``symlink``,
    ``hard_link``, ``exists``, ``not_owned``, ``layout``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def _shown(text: str) -> str:
    # Error texts end up in HTTP responses and logs: never echo megabytes back.
    return repr(text) if len(text) <= MAX_PATH_CHARS else repr(text[:200]) + "..."


def _resolve(text: str) -> Path:
    try:
        return Path(text).expanduser().resolve()
    except (RuntimeError, OSError) as exc:
        # The OS error's text names the path it failed on: only its kind is reported.
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc.__class__.__name__
        raise PathNotAllowed(f"Portability path cannot be resolved: {_shown(text)} ({reason})",
                             "unresolvable") from None


def _resolve_roots(items: Sequence[str | os.PathLike[str]]) -> list[Path]:
    return [_resolve(os.fsdecode(item)) for item in items if os.fsdecode(item)]


def configured_roots(env: Mapping[str, str] | None = None) -> list[Path]:
    """Roots from the environment: the first of ``ENV_ROOTS`` that names at least one directory."""
    source = os.environ if env is None else env
    for name in ENV_ROOTS:
        roots = _resolve_roots(source.get(name, "").split(os.pathsep))
        if roots:
            return roots
    return []


def _refused_character(text: str) -> str | None:
    for char in text:
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"U+{ord(char):04X}"
    return None


def _deceptive_segment(segment: str) -> str | None:
    """Why a path segment would be read as something it does not look like, or None."""
    decoded = segment
    for _ in range(3):  # %252e%252e decodes twice
        try:
            step = unquote(decoded, errors="strict") if "%" in decoded else decoded
        except UnicodeDecodeError:
            break
        if step == decoded:
            break
        decoded = step
    if decoded != segment and (decoded in {".", ".."} or _SEPARATORS.search(decoded)):
        return f"percent-encoded dot segment or separator {segment!r}"
    if any(char in _DOT_LOOKALIKES for char in segment):
        return f"dot look-alike character in {segment!r}"
    if any(char in _SLASH_LOOKALIKES for char in segment):
        return f"slash look-alike character in {segment!r}"
    if any(_invisible(char) for char in segment):
        return f"invisible or blank look-alike character in {segment!r}"
    folded = unicodedata.normalize("NFKC", segment)
    if folded != segment and (folded.strip(". ") == "" or _SEPARATORS.search(folded)):
        return f"{segment!r} reads as {folded!r}"
    for index, char in enumerate(segment):
        if unicodedata.combining(char) and index and segment[index - 1] == ".":
            return f"combining mark on a dot in {segment!r}"
    if segment and unicodedata.combining(segment[0]):
        return f"a name that starts with a combining mark (drawn on nothing) in {segment!r}"
    return None


def _check_name_tricks(text: str) -> None:
    refused = _refused_character(text)
    if refused:
        raise PathNotAllowed(f"Portability path contains an illegal character ({refused}: control, format, "
                             "separator or surrogate)", "control_character")
    for segment in _SEPARATORS.split(text):
        deceptive = _deceptive_segment(segment)
        if deceptive:
            raise PathNotAllowed(f"Portability path refused: {deceptive}", "deceptive_segment")


def _check_text(text: str) -> None:
    if _CONTROL.search(text):
        raise PathNotAllowed(f"Portability path contains illegal control character: {_shown(text)}",
                             "control_character")
    _check_name_tricks(text)
    if not text:
        raise PathNotAllowed("Portability path is empty", "unresolvable")
    if len(text) > MAX_PATH_CHARS:
        raise PathNotAllowed(f"Portability path is too long: {len(text)} characters (at most {MAX_PATH_CHARS})",
                             "too_long")
    parts = _SEPARATORS.split(text)
    if len([p for p in parts if p not in ("", ".")]) > MAX_SEGMENTS:
        raise PathNotAllowed(f"Portability path is too deep: more than {MAX_SEGMENTS} folders", "too_long")
    for part in parts:
        if len(os.fsencode(part)) > MAX_COMPONENT_BYTES:
            raise PathNotAllowed(f"Portability path has a name longer than {MAX_COMPONENT_BYTES} bytes: "
                                 f"{_shown(part[:60])}...", "too_long")


def resolve_contained(
    path: str | os.PathLike[str],
    *,
    allowed_roots: Sequence[str | os.PathLike[str]] | None = None,
    allow_uncontained: bool = False,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The resolved path, if it may be touched; otherwise ``PathNotAllowed`` before any I/O.

    ``allowed_roots``, when non-empty, replaces the environment entirely; ``allow_uncontained``
    matters only when no roots exist at all. ``env`` stands in for ``os.environ`` (tests).
    """
    text = os.fsdecode(path)
    _check_text(text)
    resolved = _resolve(text)
    roots = _resolve_roots(allowed_roots) if allowed_roots else configured_roots(env)
    if not roots:
        if allow_uncontained:
            return resolved
        raise PathNotAllowed(CONTAINMENT_REQUIRED, "containment_required")
    for root in roots:
        # is_relative_to compares components, so /data/exports-evil is not under /data/exports.
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    raise PathNotAllowed(f"Portability path escapes allowed roots: {_shown(text)}", "escapes_roots")


def root_of(path: Path, roots: Sequence[Path]) -> Path | None:
    """The innermost of ``roots`` that ``path`` (resolved) is, or lies under; None if none."""
    holding = [root for root in roots if path == root or path.is_relative_to(root)]
    return max(holding, key=lambda root: len(root.parts), default=None)


def sanitize_upload_name(name: str) -> str:
    """A safe file name from what a browser sent: the last component only (after ``/`` or ``\\``),
    no control characters, only ``[A-Za-z0-9._-]``, no leading dot, at most 200 characters."""
    base = _SEPARATORS.split(name or "")[-1]
    if _CONTROL.search(base):
        raise PathNotAllowed("Upload file name contains a control character", "control_character")
    _check_name_tricks(base)
    base = _UNSAFE_NAME.sub("_", base).lstrip(".")
    if len(base) > MAX_UPLOAD_NAME_CHARS:
        # Keep a sensible extension: the archive format is often recognised by it (.ama.jsonl).
        suffixes = ["." + base.partition(".")[2], "." + base.rpartition(".")[2]] if "." in base else []
        suffix = next((s for s in suffixes if len(s) <= 40), "")
        base = base[: MAX_UPLOAD_NAME_CHARS - len(suffix)] + suffix
    if not base:
        raise PathNotAllowed(f"Upload file name {_shown(name or '')} has nothing usable in it", "unresolvable")
    return base
