"""Test settings: the real embedded PostgreSQL, fast password hashing, eager tasks.

Tests about background work start a real Celery worker on the local Redis
(see tests/conftest.py); everything else runs tasks eagerly in-process. Importing this module starts
nothing (mypy's Django plugin imports it): the test fixtures start the embedded server.
"""

from __future__ import annotations

import os

from memoryhub.env import env_str

if not env_str("MEMORYHUB_VAR_DIR"):
    os.environ["MEMORYHUB_VAR_DIR"] = os.path.join(os.path.dirname(os.path.dirname(__file__)), "var", "test")

from config.settings import *  # noqa: E402,F403

# A key for the test run alone, so no test writes one under var/.
if not env_str("SECRET_KEY"):
    SECRET_KEY = "test-only-" + "k" * 50  # noqa: S105
    MEMORYHUB_SECRET_KEY_FILE = None
# The migration linter (make lint: lintmigrations) is a development tool: installed with the test extra.
INSTALLED_APPS = [*INSTALLED_APPS, "django_migration_linter"]  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BROKER_URL = env_str("MEMORYHUB_TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "100000/min"}}  # noqa: F405

# Several test runs may share one embedded server (parallel sessions, xdist): each gets its own database.
DATABASES["default"]["TEST"] = {"NAME": f"test_memoryhub_{env_str('MEMORYHUB_TEST_DB_SUFFIX', str(os.getpid()))}"}  # noqa: F405

# The hashing embedder keeps the suite fast; tests of the local model name it explicitly.
MEMORYHUB_EMBEDDINGS = env_str("MEMORYHUB_TEST_EMBEDDINGS", "hashing")
# Usage counts are written in the request, so a test reads them at once (tests of the writer thread set it).
MEMORYHUB_USAGE_FLUSH_SECONDS = 0.0
# Recall's second connection always, whatever the machine's load: tests of it and of the statements it
# sends must not depend on what else runs (tests of the auto mode pass the load themselves).
MEMORYHUB_READ_BESIDE = True

# Django's test client builds the middleware for every client, and WhiteNoise reads every static file
# when it is built (41 ms a client): the tests build its table once per process (tests/static_files.py).
MIDDLEWARE = [  # noqa: F405
    "tests.static_files.WhiteNoiseOncePerProcess" if name == "whitenoise.middleware.WhiteNoiseMiddleware" else name
    for name in MIDDLEWARE  # noqa: F405
]
