"""Where the sample archives live: tests/fixtures, inside the repository."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("MEMORYHUB_FIXTURES_DIR", REPO / "tests" / "fixtures"))


def bank_folder(root: Path, bank_id: str) -> Path:
    """A bank's own folder in a portability root (``banks/<tenant>/<bank id>``, ``_`` for no tenant),
    made if missing: where the bank's archives are written and read."""
    tenant, colon, _ = bank_id.partition(":")
    folder = root / "banks" / (tenant if colon and tenant else "_") / bank_id
    folder.mkdir(parents=True, exist_ok=True)
    return folder
