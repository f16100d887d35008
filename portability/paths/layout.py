"""Where a bank's files live inside a portability root, and who may read or write where (pure rules).

Inside every root::

    <root>/banks/<tenant>/<bank id>/     one directory per bank; <tenant> is the part of the bank id
                                         before its first ':' (``acme:support`` -> ``acme``), ``_`` when
                                         the id has none (no tenant id starts with '_')
    <root>/<anything else>               files from before this layout ("legacy"): read only by a caller
                                         holding ``admin`` on every bank, written by no API or page

A bank's exports, uploads and temporary files go under its own directory only. A caller may read from
the directory of any bank it holds ``admin`` on (moving memories between two of its own banks), never
from another's; the root, ``banks/`` and a tenant directory are nobody's, so nothing reads them whole
(a Markdown import of the root would read every bank's files) and nothing writes over them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from portability.paths.rules import PathNotAllowed

BANKS_DIR = "banks"
NO_TENANT = "_"


def tenant_dir(bank_id: str) -> str:
    tenant, colon, _ = bank_id.partition(":")
    return tenant if colon and tenant else NO_TENANT


def bank_parts(bank_id: str) -> tuple[str, str, str]:
    """The bank's directory, as components below a root."""
    return (BANKS_DIR, tenant_dir(bank_id), bank_id)


def shown_bank_dir(bank_id: str) -> str:
    return "/".join(bank_parts(bank_id)) + "/"


def owner(parts: Sequence[str]) -> str | None:
    """The bank whose directory holds ``parts`` (or is it), or None: legacy files and the layout's own
    directories belong to no bank. A bank directory under the wrong tenant belongs to nobody either."""
    if len(parts) >= 3 and parts[0] == BANKS_DIR and parts[1] == tenant_dir(parts[2]):
        return parts[2]
    return None


def in_layout(parts: Sequence[str]) -> bool:
    """True for the root, ``banks/`` and anything below it: the part of a root that the layout owns."""
    return not parts or parts[0] == BANKS_DIR


def check_write(parts: Sequence[str], bank_id: str) -> None:
    """A bank writes (exports, uploads) strictly inside its own directory: never the directory itself, an
    ancestor of it, another bank's directory or a legacy place."""
    if owner(parts) != bank_id or len(parts) < 4:
        raise PathNotAllowed(f"Portability path is outside bank {bank_id}'s directory: its files go under "
                             f"{shown_bank_dir(bank_id)} in a root (a path relative to that directory "
                             "is placed there)", "not_owned")


def check_read(parts: Sequence[str], *, may_admin: Callable[[str], bool], every_bank: bool) -> None:
    """Reading needs ``admin`` on the bank whose directory holds the file; legacy files need ``admin`` on
    every bank; the root and the layout's directories are read by nobody."""
    holder = owner(parts)
    if holder is not None and may_admin(holder):
        return
    if holder is None and not in_layout(parts) and every_bank:
        return
    raise PathNotAllowed("Portability path is not in the directory of a bank you administer (a bank's files "
                         "are under banks/<tenant>/<bank id>/ in a root)", "not_owned")


def check_cli_write(parts: Sequence[str]) -> None:
    """The operator at the shell writes anywhere in a root except over the root and the layout's own
    directories (a directory export there would replace every bank's files)."""
    if not parts or (parts[0] == BANKS_DIR and len(parts) < 4):
        raise PathNotAllowed("Portability path names a root or a directory of the bank layout; write into a "
                             "file or folder inside it", "layout")


__all__ = ["BANKS_DIR", "NO_TENANT", "bank_parts", "check_cli_write", "check_read", "check_write", "in_layout",
           "owner", "shown_bank_dir", "tenant_dir"]
