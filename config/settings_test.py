"""Test settings: the real embedded PostgreSQL, fast password hashing, eager tasks.

Tests about background work start a real Celery worker on the local Redis
(see tests/conftest.py); everything else runs tasks eagerly in-process.
"""

from __future__ import annotations

import os

os.environ.setdefault("MEMORYHUB_VAR_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test"))

from config.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BROKER_URL = os.environ.get("MEMORYHUB_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "100000/min"}}  # noqa: F405

# Several test runs may share one embedded server (parallel sessions, xdist): each gets its own database.
DATABASES["default"]["TEST"] = {"NAME": f"test_memoryhub_{os.environ.get('MEMORYHUB_TEST_DB_SUFFIX', os.getpid())}"}  # noqa: F405

# The hashing embedder keeps the suite fast; tests of the local model name it explicitly.
MEMORYHUB_EMBEDDINGS = os.environ.get("MEMORYHUB_TEST_EMBEDDINGS", "hashing")
# Usage counts are written in the request, so a test reads them at once (tests of the writer thread set it).
MEMORYHUB_USAGE_FLUSH_SECONDS = 0.0
