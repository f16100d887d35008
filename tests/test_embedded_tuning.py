"""The embedded server is sized for the machine: settings computed from its memory, applied at start."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memoryhub.embedded import (
    TUNING_FILE,
    _machine_memory,
    _ships_prewarm,
    embedded_database_url,
    embedded_server_settings,
    release_embedded_database,
    tune_embedded_server,
)

GB = 1 << 30


@pytest.mark.parametrize(("memory", "buffers", "cache"), [
    (GB // 4, "128MB", "512MB"),  # a small machine keeps PostgreSQL's own floor
    (24 * GB, "6144MB", "12288MB"),
    (256 * GB, "8192MB", "131072MB"),  # shared buffers stop at 8 GB; the cache guess does not
])
def test_settings_follow_the_machines_memory(memory, buffers, cache):
    settings = embedded_server_settings(memory)
    assert (settings["shared_buffers"], settings["effective_cache_size"]) == (buffers, cache)
    assert settings["max_wal_size"] == "4GB" and settings["random_page_cost"] == "1.1"
    assert settings["shared_preload_libraries"] == "pg_prewarm"
    assert "shared_preload_libraries" not in embedded_server_settings(memory, prewarm=False)


def test_a_new_data_directory_starts_with_the_settings_and_keeps_one_include(server_dir: Path):
    data_dir = server_dir / "pg"
    url = embedded_database_url(data_dir)
    try:
        with psycopg.connect(url) as conn:
            shown = {name: conn.execute(f"SHOW {name}").fetchone()[0]  # noqa: S608  (names from our own dict)
                     for name in ("shared_buffers", "max_wal_size", "random_page_cost", "shared_preload_libraries")}

    finally:
        release_embedded_database(data_dir)
    wanted = embedded_server_settings(_machine_memory(), prewarm=_ships_prewarm())
    # The autoprewarm worker wrote down at shutdown which pages the buffers held, for the next start.
    assert (data_dir / "autoprewarm.blocks").exists() == _ships_prewarm()
    assert shown == {name: wanted[name] for name in shown}
    assert not tune_embedded_server(data_dir)  # written once: nothing changes on the next start
    assert (data_dir / "postgresql.conf").read_text().count(TUNING_FILE) == 1


_JOIN = """
import sys, psycopg
from pathlib import Path
from memoryhub.embedded import embedded_database_url, release_embedded_database
data_dir = Path(sys.argv[1])
sys.stdin.readline()  # every process waits here until all are ready, then they start at once
try:
    with psycopg.connect(embedded_database_url(data_dir)) as conn:
        print(conn.execute("SHOW shared_buffers").fetchone()[0], flush=True)
        sys.stdin.readline()  # still connected while the others start or join
finally:
    release_embedded_database(data_dir)
"""


def test_processes_starting_on_a_new_data_directory_at_once_all_join_one_tuned_server(server_dir: Path):
    """Two test workers on a fresh clone did this: one raced the other's creation of the folder, or
    joined while the other restarted the server to apply its settings."""
    import subprocess
    import sys

    data_dir = server_dir / "pg"
    starters = [subprocess.Popen([sys.executable, "-c", _JOIN, str(data_dir)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
                for _ in range(4)]
    for starter in starters:
        starter.stdin.write("go\n")  # type: ignore[union-attr]
        starter.stdin.flush()  # type: ignore[union-attr]
    shown = [starter.stdout.readline().strip() for starter in starters]  # type: ignore[union-attr]
    outcomes = [starter.communicate("done\n", timeout=180) for starter in starters]
    assert [starter.returncode for starter in starters] == [0] * 4, [err[-2000:] for _, err in outcomes]
    wanted = embedded_server_settings(_machine_memory(), prewarm=_ships_prewarm())["shared_buffers"]
    assert shown == [wanted] * 4
