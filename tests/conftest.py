"""Shared fixtures: banks, tokens with grants, a JSON API client, operators."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from banks.models import Bank
from banks.services.banks import bank_create
from banks.services.tokens import token_create


class ApiClient:
    """Django's test client speaking JSON with a bearer token."""

    def __init__(self, token: str | None = None, header: str = "Authorization") -> None:
        self.client = Client()
        self.token = token
        self.header = header

    def _headers(self) -> dict[str, str]:
        if not self.token:
            return {}
        if self.header == "X-Api-Key":
            return {"HTTP_X_API_KEY": self.token}
        return {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        data = body if isinstance(body, str | bytes) else json.dumps(body if body is not None else {})
        return self.client.post(path, data, content_type="application/json", **self._headers(), **kwargs)

    def put(self, path: str, body: Any = None) -> Any:
        return self.client.put(path, json.dumps(body or {}), content_type="application/json", **self._headers())

    def patch(self, path: str, body: Any = None) -> Any:
        return self.client.patch(path, json.dumps(body or {}), content_type="application/json", **self._headers())

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.client.get(path, params or {}, **self._headers())

    def delete(self, path: str, params: dict[str, Any] | None = None) -> Any:
        from urllib.parse import urlencode

        query = f"?{urlencode(params, doseq=True)}" if params else ""
        return self.client.delete(path + query, **self._headers())


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Start (or join) the embedded PostgreSQL the settings name, before the test database is made:
    importing the settings starts nothing."""
    from django.conf import settings

    from memoryhub.embedded import prepare_local_install

    prepare_local_install(settings)


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """A folder for a server of the test's own (an embedded PostgreSQL's data directory, a fresh install).

    Under the run's var directory, not pytest's temporary one: started by root, the server runs as a
    system user of its own, and every pytest run on the machine makes its temporary root readable by
    its owner alone again, so a server there stops being able to read its own directory."""
    from django.conf import settings

    folder = Path(settings.VAR_DIR) / "servers" / uuid.uuid4().hex[:12]
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def make_bank(db: None) -> Callable[..., Bank]:
    def make(bank_id: str = "user-alice", **kwargs: Any) -> Bank:
        return bank_create(bank_id=bank_id, actor="test", get_existing=True, **kwargs)

    return make


@pytest.fixture
def bank(make_bank: Callable[..., Bank]) -> Bank:
    return make_bank("user-alice")


@pytest.fixture
def make_token(db: None) -> Callable[..., str]:
    def make(grants: dict[str, list[str]] | None = None, **kwargs: Any) -> str:
        grants = grants if grants is not None else {"user-alice": ["read", "write", "forget", "admin"]}
        _, secret = token_create(
            name=kwargs.pop("name", "test"), actor="test",
            grants=[{"bank": b, "permissions": p} for b, p in grants.items()], **kwargs,
        )
        return secret

    return make


@pytest.fixture
def api(make_token: Callable[..., str], bank: Bank) -> ApiClient:
    """A client whose token may do everything on bank ``user-alice``."""
    return ApiClient(make_token())


@pytest.fixture
def api_for(make_token: Callable[..., str]) -> Callable[..., ApiClient]:
    def make(grants: dict[str, list[str]], header: str = "Authorization") -> ApiClient:
        return ApiClient(make_token(grants), header=header)

    return make


@pytest.fixture
def operator(db: None, django_user_model: Any) -> Any:
    return django_user_model.objects.create_user(username="olga", password="pw-olga-123")


@pytest.fixture
def operator_client(operator: Any) -> Client:
    client = Client()
    client.force_login(operator)
    return client


@pytest.fixture(autouse=True)
def _recall_process_state_reset() -> Any:
    """Recall's helper thread holds connections of its own: closed after each test, as the test's are,
    so none is open when the test database is dropped. Its per-process memos start empty."""
    yield
    from banks.selectors.recall_memo import clear_recall_memos
    from memoryhub.read_beside import close_helper_connections

    close_helper_connections()
    clear_recall_memos()  # per-process figures of banks (sizes, word counts) that the next test's banks may reuse


# prepared_texts: what a statement prepared by name stands for (tests that read the statements a request ran).
from tests.prepared_texts import prepared_texts  # noqa: E402,F401  (fixture)
from tests.worker import celery_worker  # noqa: E402,F401  (fixture)

# The fakes of what is off this machine (an OpenAI-compatible server, a slow provider, an MCP session).
pytest_plugins = ["tests.fakes"]

# The statement-routing check (tests/bank_routing.py), on every run (CI's too): strict unless
# MEMORYHUB_BANK_ROUTING says report or off. Its allow-list is printed with reasons at the end.
from tests import bank_routing  # noqa: E402
from tests.bank_routing import bank_routing_check  # noqa: E402,F401  (autouse fixture)
from tests.db_sessions import name_connections_by_thread, sessions_left_on_the_test_database_ended  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    from django.conf import settings

    # The static root, as every entry point makes it (memoryhub.embedded.prepare_local_install): the API
    # fuzz cases are collected through a request handler, before any fixture runs, and whitenoise
    # warned of the missing folder on a fresh clone.
    Path(settings.STATIC_ROOT).mkdir(parents=True, exist_ok=True)
    bank_routing.configure(config)
    name_connections_by_thread()


def pytest_sessionstart(session: pytest.Session) -> None:
    bank_routing.session_start(session)


def pytest_sessionfinish(session: pytest.Session) -> None:
    bank_routing.worker_finish(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: a worker is done; its routing figures join the controller's."""
    bank_routing.merge_worker(node.config, getattr(node, "workeroutput", {}))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    bank_routing.summary(terminalreporter, config)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """The partitioned run (MEMORYHUB_BANK_PARTITIONS, make test) proves something only if the test
    database really is partitioned: a conversion that did nothing stops the run here.

    At the end, before the test database is dropped, every other session still on it is named (its
    process and thread, see tests.db_sessions) and ended: one left open made the drop fail
    and left the database behind on the server."""
    from django.conf import settings
    from django.db import connection

    if settings.MEMORYHUB_BANK_PARTITIONS:
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute("SELECT relkind FROM pg_class WHERE oid = 'banks_memory'::regclass")
            assert cursor.fetchone()[0] == "p", "MEMORYHUB_BANK_PARTITIONS is set but banks_memory is not partitioned"
    yield
    with django_db_blocker.unblock():
        sessions_left_on_the_test_database_ended()
