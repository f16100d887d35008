"""Rate limits hold across web processes: each process below is a separate interpreter with its own
cache connection, as gunicorn's workers are, and they count one token's requests together."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings

from tests.worker import REPO, _database_url

COUNT = """
import sys, django
django.setup()
from types import SimpleNamespace
from banks.api.throttling import TokenRateThrottle
TokenRateThrottle.THROTTLE_RATES = {"token": "3/min"}
request = SimpleNamespace(auth=SimpleNamespace(pk=sys.argv[1]))
print(" ".join("allowed" if TokenRateThrottle().allow_request(request, None) else "refused"
               for _ in range(int(sys.argv[2]))))
"""


def requests_in_another_process(token: str, count: int, cache_url: str | None) -> list[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
           "MEMORYHUB_EMBEDDED_DATABASE_URL": _database_url(), "SECRET_KEY": settings.SECRET_KEY,
           "MEMORYHUB_VAR_DIR": str(settings.VAR_DIR)}
    env.pop("MEMORYHUB_CACHE_URL", None)
    if cache_url:
        env["MEMORYHUB_CACHE_URL"] = cache_url
    result = subprocess.run([sys.executable, "-c", COUNT, token, str(count)], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()


@pytest.mark.parametrize("cache_url", [None, "redis://127.0.0.1:6379/14"], ids=["database", "redis"])
def test_two_processes_share_one_tokens_count(db, cache_url):
    token = f"shared-{uuid.uuid4().hex}"  # a fresh identity: no count left over from another test
    assert requests_in_another_process(token, 2, cache_url) == ["allowed", "allowed"]
    assert requests_in_another_process(token, 2, cache_url) == ["allowed", "refused"]
