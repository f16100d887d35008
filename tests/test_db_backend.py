"""The connection health check: no round trip for a healthy idle connection, and a dead one is seen."""

from __future__ import annotations

import pytest
from django.db import connection, connections

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_healthy_idle_connection_is_usable_without_a_statement(monkeypatch):
    from django.db.backends.postgresql import base

    connection.ensure_connection()
    asked: list[str] = []
    monkeypatch.setattr(base.DatabaseWrapper, "is_usable", lambda self: asked.append("SELECT 1") or True)
    assert connection.is_usable() is True
    assert asked == []


def test_a_connection_the_server_ended_is_not_usable_and_is_replaced():
    other = connections.create_connection("default")
    try:
        other.ensure_connection()
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
            assert cursor.fetchone()[0] is True
        assert other.is_usable() is False
        # Django's per-request check closes it, and the next query opens a new session.
        other.health_check_enabled, other.health_check_done = True, False
        other.close_if_health_check_failed()
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            assert cursor.fetchone()[0] != pid
    finally:
        other.close()


def test_the_backend_is_ours():
    assert connection.settings_dict["ENGINE"] == "memoryhub.postgres"
