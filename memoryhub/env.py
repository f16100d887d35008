"""Typed readers for configuration from the environment.

Each reader fails loudly on a value it cannot interpret, so a typo in a
deployment shows up at start-up instead of as a silently ignored setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "", env: Mapping[str, str] | None = None) -> str:
    source = os.environ if env is None else env
    return source.get(name, default)


def env_bool(name: str, default: bool = False, env: Mapping[str, str] | None = None) -> bool:
    source = os.environ if env is None else env
    if name not in source:
        return default
    raw = source[name].strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0, true/false, yes/no, on/off; got {source[name]!r}")


def env_int(name: str, default: int, env: Mapping[str, str] | None = None) -> int:
    source = os.environ if env is None else env
    raw = source.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer; got {raw!r}") from None


def env_float(name: str, default: float, env: Mapping[str, str] | None = None) -> float:
    source = os.environ if env is None else env
    raw = source.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number; got {raw!r}") from None


def env_list(name: str, default: list[str] | None = None, sep: str = ",",
             env: Mapping[str, str] | None = None) -> list[str]:
    source = os.environ if env is None else env
    raw = source.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(sep) if item.strip()]
