"""The audit page walks a long log by keyset on (created_at, id): every event once, newest first,
even when many events share one instant."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from banks.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_older_pages_show_every_event_once_in_order(bank, django_user_model):
    AuditEvent.objects.bulk_create([AuditEvent(bank=bank, bank_ref=bank.bank_id, actor="test", action="memory.retain",
                                               target_ids=[f"m{i:03d}"]) for i in range(260)])
    base = timezone.now() - timedelta(days=1)
    # 120 events share one instant (a bulk write); the rest are a second apart.
    for i, event in enumerate(AuditEvent.objects.filter(bank=bank).order_by("id")):
        AuditEvent.objects.filter(pk=event.pk).update(created_at=base if 60 <= i < 180 else base + timedelta(seconds=i))
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    url, seen = f"/audit/?bank={bank.bank_id}", []
    while url:
        page = client.get(url).content.decode()
        seen += re.findall(r"\bm\d{3}\b", page)
        older = re.search(r'href="(\?bank=[^"]*before=\d+)"', page)
        url = "/audit/" + older.group(1).replace("&amp;", "&") if older else ""
    expected = [e.target_ids[0] for e in AuditEvent.objects.filter(bank=bank, action="memory.retain")
                .order_by("-created_at", "-id")]
    assert seen == expected and len(set(seen)) == 260


def test_an_event_naming_thousands_of_memories_shows_the_first_few_and_how_many_more(bank, django_user_model):
    AuditEvent.objects.create(bank=bank, bank_ref=bank.bank_id, actor="test", action="bank.import",
                              target_ids=[f"imp{i:05d}" for i in range(3000)])
    AuditEvent.objects.create(bank=bank, bank_ref=bank.bank_id, actor="test", action="memory.retain",
                              target_ids=["solo01"])
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    page = client.get(f"/audit/?bank={bank.bank_id}").content.decode()
    assert "imp00000, imp00001" in page and "+2995 more" in page
    assert "imp00005" not in page  # the rest stay in the event (and the CSV), not on the page
    assert "solo01" in page and page.count(" more</span>") == 1
