"""Operator logins: failed passwords are counted and audited, and an account that fails too often is
locked out, the right password refused too, until the lockout ends."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from banks.models import AuditEvent, RateCounter

pytestmark = pytest.mark.django_db


def _login(client: Client, password: str, username: str = "olga", url: str = "/login/") -> bool:
    client.post(url, {"username": username, "password": password})
    return "_auth_user_id" in client.session


def _end_lockouts() -> None:
    """What the passing of MEMORYHUB_LOGIN_LOCKOUT_SECONDS does: every open window is moved into the past."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {RateCounter._meta.db_table} SET started = started - interval '1 day'")  # noqa: S608


def test_thirty_wrong_passwords_then_the_right_one_is_refused_until_the_lockout_ends(operator):
    client = Client()
    assert not any(_login(client, f"wrong-{i}") for i in range(30))
    assert not _login(client, "pw-olga-123")
    page = client.post("/login/", {"username": "olga", "password": "pw-olga-123"}).content.decode()
    assert "locked out" in page
    assert AuditEvent.objects.filter(action="operator.login_failed").count() == 32
    locked = AuditEvent.objects.filter(action="operator.locked_out")
    assert locked.count() == 1 and locked.get().details["what"] == "account"
    assert AuditEvent.objects.filter(action="operator.login_failed", details__locked_out=True).count() >= 20
    _end_lockouts()
    assert _login(Client(), "pw-olga-123")


def test_the_admin_login_is_guarded_too(operator):
    operator.is_staff = True
    operator.save()
    client = Client()
    for i in range(12):
        _login(client, f"wrong-{i}", url="/admin/login/")
    assert not _login(client, "pw-olga-123", url="/admin/login/")
    assert not _login(Client(), "pw-olga-123")


def test_a_few_mistakes_do_not_lock_anyone_out(operator):
    client = Client()
    for i in range(3):
        _login(client, f"wrong-{i}")
    page = client.post("/login/", {"username": "olga", "password": "wrong"}).content.decode()
    assert "did not match" in page and "locked out" not in page
    assert _login(client, "pw-olga-123")


def test_one_address_guessing_many_accounts_is_locked_out(operator, django_user_model, settings):
    settings.MEMORYHUB_LOGIN_MAX_FAILURES_PER_ADDRESS = 20
    client = Client()
    for i in range(25):
        _login(client, "guess", username=f"someone-{i}")
    assert AuditEvent.objects.filter(action="operator.locked_out", details__what="address").exists()
    assert not _login(client, "pw-olga-123")
    other_address = Client(REMOTE_ADDR="10.0.0.9")
    assert _login(other_address, "pw-olga-123")


def test_lockouts_counted_in_redis(django_user_model, settings):
    """With MEMORYHUB_CACHE_URL the counts live in Redis, shared by every web process the same way."""
    import uuid

    import redis

    settings.MEMORYHUB_CACHE_URL = "redis://127.0.0.1:6379/14"
    name = f"op-{uuid.uuid4().hex[:12]}"
    django_user_model.objects.create_user(username=name, password="pw-right-123")
    client = Client(REMOTE_ADDR=f"10.9.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}")
    for i in range(12):
        _login(client, f"wrong-{i}", username=name)
    assert not _login(client, "pw-right-123", username=name)
    assert AuditEvent.objects.filter(action="operator.locked_out").count() == 1
    from banks.services.login_guard import _key

    redis.Redis.from_url(settings.MEMORYHUB_CACHE_URL).delete(f"memoryhub:rate:{_key('lock', name)}")
    assert _login(client, "pw-right-123", username=name)
