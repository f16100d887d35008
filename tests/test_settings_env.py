from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryhub.env import env_bool, env_float, env_int, env_list, env_str, env_value

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_env_bool_accepts_only_clear_values():
    assert env_bool("X", env={"X": "true"}) is True
    assert env_bool("X", env={"X": "0"}) is False
    assert env_bool("X", True, env={}) is True
    with pytest.raises(ImproperlyConfigured, match="X must be one of"):
        env_bool("X", env={"X": "maybe"})


def test_an_empty_value_is_unset_for_every_reader():
    blank = {"X": "", "Y": "   "}
    assert env_str("X", "default", env=blank) == "default"
    assert env_str("Y", "default", env=blank) == "default"
    assert env_bool("X", True, env=blank) is True
    assert env_int("X", 3, env=blank) == 3
    assert env_float("Y", 0.5, env=blank) == 0.5
    assert env_list("X", ["a"], env=blank) == ["a"]
    assert env_value("X", env=blank) is None and env_value("Z", env={"Z": " v "}) == "v"


def test_env_numbers_and_lists():
    assert env_int("N", 3, env={"N": "7"}) == 7
    assert env_int("N", 3, env={}) == 3
    assert env_float("F", 0.5, env={"F": "0.9"}) == 0.9
    with pytest.raises(ImproperlyConfigured, match="N must be an integer"):
        env_int("N", 3, env={"N": "seven"})
    assert env_list("L", env={"L": "a, b,,c"}) == ["a", "b", "c"]


def run_settings(env: dict[str, str]) -> str:
    full = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS"}}
    full.update(env)
    result = subprocess.run([sys.executable, "-c", "import config.settings"], env=full, capture_output=True,
                            text=True, cwd=os.path.dirname(os.path.dirname(__file__)), timeout=60)
    return result.stderr


def test_production_without_a_secret_key_refuses_to_start():
    err = run_settings({"DATABASE_URL": "postgresql://u@127.0.0.1/x"})
    assert "SECRET_KEY is not set" in err


def test_debug_with_a_public_host_refuses_to_start():
    err = run_settings({"DATABASE_URL": "postgresql://u@127.0.0.1/x", "SECRET_KEY": "k" * 50, "DEBUG": "1",
                        "ALLOWED_HOSTS": "memory.example.com"})
    assert "DEBUG is on while ALLOWED_HOSTS names a public host" in err


def settings_value(env: dict[str, str], expression: str, cwd: os.PathLike[str] | str | None = None) -> str:
    names = {"DATABASE_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "MEMORYHUB_PORTABILITY_ROOTS",
             "ASTROCYTE_PORTABILITY_ROOTS", "MEMORYHUB_CACHE_URL", "MEMORYHUB_EMBEDDED_DATABASE_URL"}
    full = {k: v for k, v in os.environ.items() if k not in names}
    # A database URL keeps the import from starting an embedded server; nothing connects to it.
    full.setdefault("MEMORYHUB_EMBEDDED_DATABASE_URL", "postgresql://u@127.0.0.1:1/x")
    full.update(env)
    full["PYTHONPATH"] = REPO  # run from elsewhere when ``cwd`` says so
    result = subprocess.run([sys.executable, "-c", f"import config.settings as s; print({expression})"],
                            env=full, capture_output=True, text=True, timeout=60,
                            cwd=cwd or REPO)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_embedded_configuration_defaults_to_one_portability_root_under_var(tmp_path):
    var = tmp_path / "var"
    assert settings_value({"MEMORYHUB_VAR_DIR": str(var)}, "s.MEMORYHUB_PORTABILITY_ROOTS, s.MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED") == (
        f"{var / 'archives'} True")
    assert not var.exists()  # named, not made: the entry points make it (prepare_local_install)


def test_an_empty_var_dir_is_the_default_not_the_current_folder(tmp_path):
    assert settings_value({"MEMORYHUB_VAR_DIR": "", "MEMORYHUB_EMBEDDED_PGDATA": ""},
                          "s.VAR_DIR, s.EMBEDDED_PGDATA, s.MEMORYHUB_SECRET_KEY_FILE", cwd=tmp_path) == (
        f"{REPO}/var {REPO}/var/postgres {REPO}/var/secret_key")


def test_an_explicit_portability_setting_replaces_the_default(tmp_path):
    var, mine = tmp_path / "var", tmp_path / "mine"
    env = {"MEMORYHUB_VAR_DIR": str(var)}
    assert settings_value({**env, "MEMORYHUB_PORTABILITY_ROOTS": str(mine)},
                          "s.MEMORYHUB_PORTABILITY_ROOTS, s.MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED") == f"{mine} False"
    assert settings_value({**env, "ASTROCYTE_PORTABILITY_ROOTS": str(mine)}, "s.MEMORYHUB_PORTABILITY_ROOTS") == str(mine)
    # Set but empty is unset: the default stays. The operator turns file access off with ``off``.
    assert settings_value({**env, "MEMORYHUB_PORTABILITY_ROOTS": ""}, "s.MEMORYHUB_PORTABILITY_ROOTS") == str(var / "archives")
    assert settings_value({**env, "MEMORYHUB_PORTABILITY_ROOTS": "off"}, "repr(s.MEMORYHUB_PORTABILITY_ROOTS)") == "''"


def test_production_keeps_file_access_closed_until_roots_are_chosen(tmp_path):
    env = {"MEMORYHUB_VAR_DIR": str(tmp_path / "var"), "DATABASE_URL": "postgresql://u@127.0.0.1:1/x",
           "SECRET_KEY": "k" * 50}
    assert settings_value(env, "repr(s.MEMORYHUB_PORTABILITY_ROOTS)") == "''"


def test_rate_limit_cache_is_the_database_unless_redis_is_configured():
    backend = "s.CACHES['default']['BACKEND'], s.CACHES['default']['LOCATION']"
    assert settings_value({}, backend) == "django.core.cache.backends.db.DatabaseCache memoryhub_cache"
    assert settings_value({"MEMORYHUB_CACHE_URL": "redis://127.0.0.1:6379/3"}, backend) == (
        "django.core.cache.backends.redis.RedisCache redis://127.0.0.1:6379/3")


def test_importing_the_settings_starts_no_server_and_writes_no_file(tmp_path):
    """Tools import the settings (mypy's plugin, django-admin check, a script): they read configuration only."""
    import psutil

    var = tmp_path / "var"
    names = {"DATABASE_URL", "SECRET_KEY", "MEMORYHUB_EMBEDDED_DATABASE_URL", "CELERY_BROKER_URL",
             "MEMORYHUB_PORTABILITY_ROOTS", "ASTROCYTE_PORTABILITY_ROOTS", "MEMORYHUB_EMBEDDED_PGDATA"}
    env = {k: v for k, v in os.environ.items() if k not in names} | {"MEMORYHUB_VAR_DIR": str(var), "PYTHONPATH": REPO}
    for module in ("config.settings", "config.settings_test"):
        result = subprocess.run(
            [sys.executable, "-c", f"import {module} as s; print(s.DATABASES['default']['HOST'] or '-', bool(s.SECRET_KEY))"],
            env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split()[0] == "-"  # no server's address: none was started
    assert list(tmp_path.iterdir()) == []
    assert not any(str(var) in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))


def test_a_connection_before_the_entry_point_started_the_server_says_so(tmp_path):
    names = {"DATABASE_URL", "SECRET_KEY", "MEMORYHUB_EMBEDDED_DATABASE_URL"}
    env = {k: v for k, v in os.environ.items() if k not in names} | {
        "MEMORYHUB_VAR_DIR": str(tmp_path / "var"), "DJANGO_SETTINGS_MODULE": "config.settings"}
    script = "import django; django.setup(); from django.db import connection; connection.ensure_connection()"
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                            cwd=REPO)
    assert result.returncode != 0
    assert f"The embedded PostgreSQL in {tmp_path / 'var' / 'postgres'} was not started by this process" in result.stderr
    assert not (tmp_path / "var").exists()
