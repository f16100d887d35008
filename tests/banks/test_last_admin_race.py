"""Two admins removing each other at the same moment leave the bank one admin: the membership service
locks the bank's admin rows before it counts them, so the second removal waits and then sees the first."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from banks.models import BankMembership
from banks.services.memberships import membership_remove
from memoryhub.errors import Conflict
from tests.worker import wait_for


@pytest.mark.django_db(transaction=True)  # two connections, each its own transaction
def test_two_admins_removing_each_other_at_once_leave_one(make_bank, django_user_model):
    bank = make_bank("team-race")
    first, second = (BankMembership.objects.create(user=django_user_model.objects.create_user(username=name),
                                                   bank=bank, role="admin") for name in ("ann", "bob"))
    removed, proceed, outcome = threading.Event(), threading.Event(), {}

    def remove_first() -> None:
        try:
            with transaction.atomic():
                membership_remove(membership=first, actor="user:bob")
                removed.set()
                proceed.wait(30)  # still uncommitted while the other removal starts
        finally:
            connection.close()

    def remove_second() -> None:
        try:
            membership_remove(membership=BankMembership.objects.select_related("user", "bank").get(pk=second.pk),
                              actor="user:ann")
            outcome["second"] = "removed"
        except Conflict as exc:
            outcome["second"] = exc.message
        finally:
            connection.close()

    a = threading.Thread(target=remove_first)
    a.start()
    assert removed.wait(30)
    b = threading.Thread(target=remove_second)
    b.start()
    # The second removal waits on the admin rows the first one locked (a lock wait, not a guess at timing).
    wait_for(lambda: _lock_waiters() >= 1, timeout=30)
    proceed.set()
    a.join(30)
    b.join(30)
    assert outcome["second"] == "bob is the last admin of bank team-race: make another operator admin first"
    assert list(BankMembership.objects.filter(bank=bank).values_list("user__username", "role")) == [("bob", "admin")]


def _lock_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return int(cursor.fetchone()[0])
