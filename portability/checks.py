"""System checks for the configured portability roots."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


@register(Tags.compatibility)
def portability_roots_check(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    raw = getattr(settings, "MEMORYHUB_PORTABILITY_ROOTS", "")
    messages: list[Any] = []
    if not raw:
        return [
            Warning(
                "No portability roots are configured: import, export, upload and download are disabled.",
                hint="Set MEMORYHUB_PORTABILITY_ROOTS to one or more directories separated by "
                f"{os.pathsep!r}.",
                id="portability.W001",
            )
        ]
    for item in (part for part in raw.split(os.pathsep) if part):
        path = Path(item).expanduser()
        if not path.is_absolute():
            messages.append(Error(f"Portability root {item!r} is not an absolute path.", id="portability.E001"))
        elif not path.is_dir():
            messages.append(Error(f"Portability root {item!r} does not exist or is not a directory.",
                                  id="portability.E002"))
        elif not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            messages.append(Error(f"Portability root {item!r} is not readable and writable by this process.",
                                  id="portability.E003"))
    return messages
