from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryhub.env import env_bool, env_float, env_int, env_list


def test_env_bool_accepts_only_clear_values():
    assert env_bool("X", env={"X": "true"}) is True
    assert env_bool("X", env={"X": "0"}) is False
    assert env_bool("X", True, env={}) is True
    with pytest.raises(ImproperlyConfigured, match="X must be one of"):
        env_bool("X", env={"X": "maybe"})


def test_env_numbers_and_lists():
    assert env_int("N", 3, env={"N": "7"}) == 7
    assert env_int("N", 3, env={}) == 3
    assert env_float("F", 0.5, env={"F": "0.9"}) == 0.9
    with pytest.raises(ImproperlyConfigured, match="N must be an integer"):
        env_int("N", 3, env={"N": "seven"})
    assert env_list("L", env={"L": "a, b,,c"}) == ["a", "b", "c"]


def run_settings(env: dict[str, str]) -> str:
    import os
    import subprocess
    import sys

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


def settings_value(env: dict[str, str], expression: str) -> str:
    import os
    import subprocess
    import sys

    names = {"DATABASE_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "MEMORYHUB_PORTABILITY_ROOTS",
             "ASTROCYTE_PORTABILITY_ROOTS", "MEMORYHUB_CACHE_URL", "MEMORYHUB_EMBEDDED_DATABASE_URL"}
    full = {k: v for k, v in os.environ.items() if k not in names}
    # A database URL keeps the import from starting an embedded server; nothing connects to it.
    full.setdefault("MEMORYHUB_EMBEDDED_DATABASE_URL", "postgresql://u@127.0.0.1:1/x")
    full.update(env)
    result = subprocess.run([sys.executable, "-c", f"import config.settings as s; print({expression})"],
                            env=full, capture_output=True, text=True, timeout=60,
                            cwd=os.path.dirname(os.path.dirname(__file__)))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_embedded_configuration_defaults_to_one_portability_root_under_var(tmp_path):
    var = tmp_path / "var"
    assert settings_value({"MEMORYHUB_VAR_DIR": str(var)}, "s.MEMORYHUB_PORTABILITY_ROOTS, s.MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED") == (
        f"{var / 'archives'} True")
    assert (var / "archives").is_dir()


def test_an_explicit_portability_setting_replaces_the_default(tmp_path):
    var, mine = tmp_path / "var", tmp_path / "mine"
    env = {"MEMORYHUB_VAR_DIR": str(var)}
    assert settings_value({**env, "MEMORYHUB_PORTABILITY_ROOTS": str(mine)},
                          "s.MEMORYHUB_PORTABILITY_ROOTS, s.MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED") == f"{mine} False"
    assert settings_value({**env, "ASTROCYTE_PORTABILITY_ROOTS": str(mine)}, "s.MEMORYHUB_PORTABILITY_ROOTS") == str(mine)
    # Set but empty: the operator turned file access off.
    assert settings_value({**env, "MEMORYHUB_PORTABILITY_ROOTS": ""}, "repr(s.MEMORYHUB_PORTABILITY_ROOTS)") == "''"
    assert not (var / "archives").exists()


def test_production_keeps_file_access_closed_until_roots_are_chosen(tmp_path):
    env = {"MEMORYHUB_VAR_DIR": str(tmp_path / "var"), "DATABASE_URL": "postgresql://u@127.0.0.1:1/x",
           "SECRET_KEY": "k" * 50}
    assert settings_value(env, "repr(s.MEMORYHUB_PORTABILITY_ROOTS)") == "''"


def test_rate_limit_cache_is_the_database_unless_redis_is_configured():
    backend = "s.CACHES['default']['BACKEND'], s.CACHES['default']['LOCATION']"
    assert settings_value({}, backend) == "django.core.cache.backends.db.DatabaseCache memoryhub_cache"
    assert settings_value({"MEMORYHUB_CACHE_URL": "redis://127.0.0.1:6379/3"}, backend) == (
        "django.core.cache.backends.redis.RedisCache redis://127.0.0.1:6379/3")
