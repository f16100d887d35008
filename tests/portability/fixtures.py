"""Where the sample archives live: tests/fixtures, inside the repository."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("MEMORYHUB_FIXTURES_DIR", REPO / "tests" / "fixtures"))
