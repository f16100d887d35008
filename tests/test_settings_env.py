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
    result = subprocess.run([sys.executable, "-c", "import memoryhub.settings"], env=full, capture_output=True,
                            text=True, cwd=os.path.dirname(os.path.dirname(__file__)), timeout=60)
    return result.stderr


def test_production_without_a_secret_key_refuses_to_start():
    err = run_settings({"DATABASE_URL": "postgresql://u@127.0.0.1/x"})
    assert "SECRET_KEY is not set" in err


def test_debug_with_a_public_host_refuses_to_start():
    err = run_settings({"DATABASE_URL": "postgresql://u@127.0.0.1/x", "SECRET_KEY": "k" * 50, "DEBUG": "1",
                        "ALLOWED_HOSTS": "memory.example.com"})
    assert "DEBUG is on while ALLOWED_HOSTS names a public host" in err
