"""The ASGI entry point gives each request's database session back when the request ends.

Django runs an ASGI request's queries on a thread of that request's own, so a connection kept for reuse
(``CONN_MAX_AGE``) is never reused: each request left one more idle session on the server until the
garbage collector found it (12 requests left 4 or 5 open here). A real uvicorn serving ``config.asgi``, against
this run's database; its sessions are told apart by their application name.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.db_sessions import sessions_on_the_test_database
from tests.live_process import server_env, serving, start_asgi
from tests.worker import _database_url

REQUESTS = 12


@pytest.mark.django_db(transaction=True)  # the server must see the bank and the token
def test_an_asgi_server_keeps_no_session_per_request(tmp_path, bank, make_token):
    name = f"asgi-{uuid.uuid4().hex[:10]}"
    env = server_env(_database_url(), PGAPPNAME=name, MEMORYHUB_READ_BESIDE="0")
    env.pop("MEMORYHUB_DB_CONN_MAX_AGE", None)
    headers = {"Authorization": f"Bearer {make_token()}"}
    with serving(start_asgi(tmp_path, env)) as (served,):
        with httpx.Client(base_url=served.url, headers=headers, timeout=60) as client:
            for i in range(REQUESTS):
                answer = client.post("/v1/recall", json={"bank_id": bank.bank_id, "query": f"order {i} shipped"})
                assert answer.status_code == 200, answer.text
        sessions = sum(1 for _, named, *_ in sessions_on_the_test_database() if named == name)
    assert sessions <= 1, f"{sessions} sessions left open after {REQUESTS} requests"
