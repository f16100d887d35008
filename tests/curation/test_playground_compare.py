"""Comparing two recall configurations marks each hit that moved against the other run."""

from __future__ import annotations

import html
import re

import pytest

from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


def test_rank_changes_between_a_and_b_are_marked(admin_client, bank):
    for text in ("Jazz concerts happen on Fridays in Lisbon.", "Alice plays jazz piano every night.",
                 "The piano tuner comes on Fridays.", "Alice moved to Lisbon in March."):
        memory_retain(bank=bank, text=text, actor="test")
    page = admin_client.get("/banks/user-alice/recall/", {
        "q": "jazz piano Fridays", "compare": "1", "a_arms": ["semantic"], "b_arms": ["keyword"], "n": "4",
    }).content.decode()
    b = html.unescape(page.split('aria-label="Configuration B"')[1])
    marks = re.findall(r'<tr class="(rank-(?:up|down|new))">', b)
    titles = re.findall(r'class="rank-move" title="([^"]+)"', b)
    assert marks and len(marks) == len(titles)
    assert all(re.fullmatch(r"(up|down) \d+ from A's #\d+|not in A's list", t) for t in titles), titles


def test_a_single_run_marks_nothing(admin_client, bank):
    memory_retain(bank=bank, text="Alice plays jazz piano every night.", actor="test")
    page = admin_client.get("/banks/user-alice/recall/", {"q": "jazz piano"}).content.decode()
    assert "rank-move" not in page.split("playground-results")[1]
