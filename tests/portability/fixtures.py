"""Where the shared sample archives live (beside the repository, in shared/fixtures)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("MEMORYHUB_FIXTURES_DIR", REPO.parent / "shared" / "fixtures"))
