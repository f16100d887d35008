"""The default server (``manage.py serve``, what ``make run`` starts) keeps answering while more slow
clients than it has web workers trickle their requests one byte every few seconds, or ask for a large
answer and never read it. Loopback only, bounded in time."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from django.conf import settings

from banks.services.bulk_memories import MemoryRow
from banks.services.memory_rows import rows_insert
from tests.test_serve_faults import free_port, wait_until
from tests.worker import REPO, _database_url

WORKERS = 2
SLOW_CLIENTS = 3 * WORKERS


def _trickler(addr: str, head_first: bool) -> socket.socket:
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=5)
    if not head_first:
        # A whole head promising a body that comes one byte at a time.
        sock.sendall(b"POST /v1/recall HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100000\r\n\r\n")
    return sock


def _serve(tmp_path, **extra: str) -> tuple[subprocess.Popen[bytes], str]:  # noqa: ANN001
    addr = f"127.0.0.1:{free_port()}"
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
        "MEMORYHUB_EMBEDDED_DATABASE_URL": _database_url(), "MEMORYHUB_VAR_DIR": str(tmp_path / "var"),
        "SECRET_KEY": settings.SECRET_KEY, "MEMORYHUB_EMBEDDINGS": "hashing", "MEMORYHUB_ADDR": addr,
        "MEMORYHUB_WEB_WORKERS": str(WORKERS), "MEMORYHUB_WEB_THREADS": "1", "MEMORYHUB_PORTABILITY_ROOTS": "off",
        **extra,
    }
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "MEMORYHUB_CACHE_URL", "MEMORYHUB_DEV", "MEMORYHUB_CELERY_EAGER"):
        env.pop(name, None)
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen([sys.executable, "manage.py", "serve", "--no-worker", "--no-beat", "--no-mcp"],
                             cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    wait_until(lambda: _status(addr, "/live") == 200, 120, "the server did not answer", tmp_path / "serve.log")
    return serve, addr


def _status(addr: str, path: str, **kwargs: object) -> int:
    """The answer's status, 0 for none within 30 s (a bound for a loaded machine: without the front these
    requests wait for gunicorn's 120 s worker timeout)."""
    try:
        if "json" in kwargs:
            return httpx.post(f"http://{addr}{path}", timeout=30, **kwargs).status_code  # type: ignore[arg-type]
        return httpx.get(f"http://{addr}{path}", timeout=30, **kwargs).status_code  # type: ignore[arg-type]
    except httpx.HTTPError:
        return 0


@pytest.mark.usefixtures("transactional_db")
def test_slow_clients_do_not_starve_the_default_server(tmp_path, make_bank, make_token):
    from django.utils import timezone

    bank = make_bank("user-alice")
    stamp = timezone.now()
    # Big enough that its download outgrows the kernel's socket buffers by far (about 24 MB).
    rows = [MemoryRow(memory_id=f"m{i}", text=f"fact {i} " + "lorem ipsum dolor sit amet " * 40,
                      fact_type="world", memory_layer="", tags=[], metadata={}, occurred_at=None,
                      retained_at=stamp, created_at=stamp, source="test", content_hash=f"h{i}", embedding=None,
                      embedding_model="", embedding_dims=None) for i in range(20_000)]
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.test import Client

    with transaction.atomic():
        rows_insert(bank.pk, rows, stamp)
    operator = get_user_model().objects.create_superuser(username="op", password="pw-for-test")
    browser = Client()
    browser.force_login(operator)
    session = browser.cookies[settings.SESSION_COOKIE_NAME].value
    token = make_token()
    auth = {"Authorization": f"Bearer {token}"}
    # Long enough that the trickling heads below are never cut off by the head deadline (tested below).
    serve, addr = _serve(tmp_path, MEMORYHUB_FRONT_HEAD_TIMEOUT="600")
    slow: list[socket.socket] = []
    try:
        # Request side: half trickle their head, half their body, one byte every two seconds.
        slow = [_trickler(addr, head_first=i % 2 == 0) for i in range(SLOW_CLIENTS)]
        head = b"POST /v1/recall HTTP/1.1\r\nHost: x\r\n"
        # Answer side: as many clients again ask for the bank's whole download and read nothing.
        host, port = addr.rsplit(":", 1)
        for _ in range(WORKERS + 1):
            reader = socket.socket()
            reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.connect((host, int(port)))
            reader.sendall(f"GET /banks/user-alice/transfer/download HTTP/1.1\r\nHost: x\r\n"
                           f"Cookie: {settings.SESSION_COOKIE_NAME}={session}\r\n\r\n".encode())
            slow.append(reader)
        answered_live = answered_recall = 0
        for step in range(8):  # about 16 s of trickling
            for i, sock in enumerate(slow[:SLOW_CLIENTS]):
                sock.sendall(head[step:step + 1] if i % 2 == 0 else b"{")
            assert _status(addr, "/live") == 200
            answered_live += 1
            assert _status(addr, "/v1/recall", json={"bank_id": "user-alice", "query": "fact 12"},
                           headers=auth) == 200
            answered_recall += 1
            time.sleep(2)
        assert answered_live == answered_recall == 8
    finally:
        for sock in slow:
            sock.close()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=30)


def _closed_with(sock: socket.socket) -> bytes | None:
    """What the server sent before closing ``sock`` (b"" for a bare close), None while it is open."""
    if not select.select([sock], [], [], 0)[0]:
        return None
    try:
        data = sock.recv(4096)
    except OSError:
        return b""
    return data if data else b""


def _stop(serve: subprocess.Popen[bytes]) -> None:
    serve.send_signal(signal.SIGTERM)
    try:
        serve.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(serve.pid, signal.SIGKILL)
        serve.wait(timeout=30)


@pytest.mark.usefixtures("transactional_db")
def test_a_trickling_head_is_closed_at_the_head_deadline_while_live_keeps_answering(tmp_path):
    """Each trickling head costs a coroutine until its deadline, then gets a 408 and its connection is
    closed; a client that sent its head and trickles its body is not cut off by that deadline."""
    serve, addr = _serve(tmp_path, MEMORYHUB_FRONT_HEAD_TIMEOUT="2")
    host, port = addr.rsplit(":", 1)
    head = b"GET /live HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 10_000
    heads = [socket.create_connection((host, int(port)), timeout=5) for _ in range(2 * WORKERS)]
    body = _trickler(addr, head_first=False)
    answers: dict[int, bytes] = {}
    try:
        # At most 120 rounds of about half a second: a bound for a loaded machine, not a measure.
        for step in range(120):
            for i, sock in enumerate(heads):
                if i not in answers:
                    closed = _closed_with(sock)
                    if closed is not None:
                        answers[i] = closed
                    else:
                        try:
                            sock.sendall(head[step:step + 1])
                        except OSError:
                            answers[i] = b""
            body.sendall(b"{")
            assert _status(addr, "/live") == 200
            if len(answers) == len(heads) and step >= 8:
                break
            time.sleep(0.5)
        assert len(answers) == len(heads), "trickling heads were never closed"
        assert all(a.startswith(b"HTTP/1.1 408") for a in answers.values()), answers
        assert _closed_with(body) is None  # still open: its body's bytes keep coming
    finally:
        for sock in [*heads, body]:
            sock.close()
        _stop(serve)

