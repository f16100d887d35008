"""The configured portability roots, and containment against them for every interface."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from memoryhub.errors import Unprocessable
from portability.paths import PathNotAllowed, resolve_contained


def portability_roots() -> list[Path]:
    raw = getattr(settings, "MEMORYHUB_PORTABILITY_ROOTS", "") or ""
    return [Path(p).expanduser().resolve() for p in raw.split(os.pathsep) if p]


def contained_path(path: str | os.PathLike[str]) -> Path:
    """Resolve ``path`` inside the configured roots or raise a 422 saying how to configure them."""
    try:
        # The settings already read MEMORYHUB_/ASTROCYTE_PORTABILITY_ROOTS; the environment is not read twice.
        return resolve_contained(path, allowed_roots=portability_roots() or None, env={})
    except PathNotAllowed as exc:
        raise Unprocessable(str(exc), reason=exc.code) from None
