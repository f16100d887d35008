"""Where this install keeps its files and which database it uses: read by the settings and by
MemoryHub's own settings, so both agree on the one rule "no DATABASE_URL means the embedded server"."""

from __future__ import annotations

from pathlib import Path

from memoryhub.env import env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MEMORYHUB_VAR_DIR", str(BASE_DIR / "var")))

DATABASE_URL = env_str("DATABASE_URL")
# Set by `manage.py serve` for the web and worker processes it starts beside its embedded server.
EMBEDDED_DATABASE_URL = env_str("MEMORYHUB_EMBEDDED_DATABASE_URL")
EMBEDDED_DATABASE = not DATABASE_URL
EMBEDDED_PGDATA = Path(env_str("MEMORYHUB_EMBEDDED_PGDATA", str(VAR_DIR / "postgres")))
EMBEDDED_DATABASE_NAME = env_str("MEMORYHUB_EMBEDDED_DATABASE", "postgres")
