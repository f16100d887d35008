"""Typed readers for configuration from the environment.

A variable set to an empty (or blank) value counts as unset: every reader falls back to its default,
so ``MEMORYHUB_VAR_DIR=`` in a unit file or a compose file cannot turn into "the current folder".
Each reader fails loudly on a value it cannot interpret, so a typo in a deployment shows up at
start-up instead of as a silently ignored setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_value(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The variable's value with surrounding blanks removed; None when it is unset or empty."""
    raw = (os.environ if env is None else env).get(name)
    if raw is None or not raw.strip():
        return None
    return raw.strip()


def env_str(name: str, default: str = "", env: Mapping[str, str] | None = None) -> str:
    value = env_value(name, env)
    return default if value is None else value


def env_bool(name: str, default: bool = False, env: Mapping[str, str] | None = None) -> bool:
    value = env_value(name, env)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0, true/false, yes/no, on/off; got {value!r}")


def env_bool_or_auto(name: str, env: Mapping[str, str] | None = None) -> bool | None:
    """A boolean, or None for "auto" (also when unset): the code decides case by case."""
    value = env_value(name, env)
    if value is None or value.lower() == "auto":
        return None
    return env_bool(name, env=env)


def env_int(name: str, default: int, env: Mapping[str, str] | None = None) -> int:
    value = env_value(name, env)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer; got {value!r}") from None


def env_float(name: str, default: float, env: Mapping[str, str] | None = None) -> float:
    value = env_value(name, env)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number; got {value!r}") from None


def env_list(name: str, default: list[str] | None = None, sep: str = ",",
             env: Mapping[str, str] | None = None) -> list[str]:
    value = env_value(name, env)
    if value is None:
        return list(default or [])
    return [item.strip() for item in value.split(sep) if item.strip()]
