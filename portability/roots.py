"""The configured portability roots, and every interface's way to a ``Location`` inside them.

REST, the transfer pages and queued jobs resolve a path only inside the caller's own banks'
directories (``portability.paths.layout``); the commands run by the operator at the shell are
trusted with the whole root, but not with the root itself or the layout's directories.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from banks.access import Principal
from memoryhub.errors import Unprocessable
from portability.paths import (
    Location,
    PathNotAllowed,
    bank_parts,
    check_read,
    check_write,
    in_layout,
    locate,
    locate_stored,
    resolve_contained,
)


def portability_roots() -> list[Path]:
    raw = getattr(settings, "MEMORYHUB_PORTABILITY_ROOTS", "") or ""
    return [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p]


def refused(exc: PathNotAllowed) -> Unprocessable:
    return Unprocessable(str(exc), reason=exc.code)


def contained_path(path: str | os.PathLike[str]) -> Path:
    """Resolve ``path`` inside the configured roots or raise a 422 saying how to configure them."""
    try:
        # The settings already read MEMORYHUB_/ASTROCYTE_PORTABILITY_ROOTS; the environment is not read twice.
        return resolve_contained(path, allowed_roots=portability_roots() or None, env={})
    except PathNotAllowed as exc:
        raise refused(exc) from None


def every_bank_admin(principal: Principal) -> bool:
    """``admin`` on every bank, present and future: a superuser, or a token granted ``admin`` on ``*``."""
    return principal.is_superuser or any(pattern == "*" and "admin" in granted
                                         for pattern, granted in principal.grants)


def bank_location(principal: Principal, bank_id: str, path: str, *, write: bool) -> Location:
    """Where ``path`` is, if ``principal`` may read it (import) or bank ``bank_id`` may write it (export).

    Each bank sees every root as its own: a path inside a root but outside the per-bank layout
    (``<root>/x.ama.jsonl``, or a relative ``x.ama.jsonl``) names that place inside the bank's own
    directory (``<root>/banks/<tenant>/<bank id>/x.ama.jsonl``), so what an Astrocyte client exports
    to a path it imports from the same path, and can reach no other bank's file. A path already in the
    layout is taken as it is: writing only inside the bank's own directory, reading inside the directory
    of any bank the caller administers. A flat file from before the layout is read as it is only by a
    caller with ``admin`` on every bank.
    """
    roots = portability_roots()
    given = text = os.fspath(path)
    try:
        if roots and isinstance(text, str) and text and not text.startswith(("/", "~")):
            text = str(roots[0] / text)
        where = locate(text, roots=roots)
        if not in_layout(where.parts):
            legacy = not write and every_bank_admin(principal) and where.exists()
            if not legacy:
                where = Location(where.root, (*bank_parts(bank_id), *where.parts))
        elif not where.parts:
            where = Location(where.root, bank_parts(bank_id))
        if write:
            check_write(where.parts, bank_id)
        else:
            check_read(where.parts, may_admin=lambda holder: principal.can(holder, "admin"),
                       every_bank=every_bank_admin(principal))
    except PathNotAllowed as exc:
        if text != given:  # a relative path: the message names it as given, not joined to the server's root
            exc = PathNotAllowed(str(exc).replace(repr(text), repr(given)), exc.code)
        raise refused(exc) from None
    return where


def stored_location(path: str, *, bank_id: str | None = None) -> Location:
    """A queued job's path (resolved and checked when the job was created), placed again without
    following anything; an export job's target must still be inside its own bank's directory."""
    try:
        where = locate_stored(path, roots=portability_roots())
        if bank_id is not None:
            check_write(where.parts, bank_id)
    except PathNotAllowed as exc:
        raise refused(exc) from None
    return where
