"""Comparing two recall configurations: one table, a row per rank with A's hit beside B's, and each hit
that moved against the other run marked."""

from __future__ import annotations

import html
import re

import pytest

from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db

TEXTS = ("Jazz concerts happen on Fridays in Lisbon.", "Alice plays jazz piano every night.",
         "The piano tuner comes on Fridays.", "Alice moved to Lisbon in March.")


def _compare(client, n="4"):
    return client.get("/banks/user-alice/recall/", {
        "q": "jazz piano Fridays", "compare": "1", "a_arms": ["semantic"], "b_arms": ["keyword"], "n": n,
    }).content.decode()


def test_rank_changes_between_a_and_b_are_marked(admin_client, bank):
    for text in TEXTS:
        memory_retain(bank=bank, text=text, actor="test")
    page = html.unescape(_compare(admin_client))
    marks = re.findall(r'<td class="hit (rank-(?:up|down|new))" data-run="B">', page)
    titles = re.findall(r'<td class="hit rank-[a-z]+" data-run="B">\s*<span class="rank-move" title="([^"]+)"', page)
    assert marks and len(marks) == len(titles)
    assert all(re.fullmatch(r"(up|down) \d+ from A's #\d+|not in A's list", t) for t in titles), titles


def test_the_two_runs_read_across_one_table_a_row_per_rank(admin_client, bank):
    for text in TEXTS:
        memory_retain(bank=bank, text=text, actor="test")
    page = _compare(admin_client)
    results = page.split('id="playground-results"')[1]
    assert results.count("<table") == 1 and 'class="table playground compare"' in results
    table = results.split('class="table playground compare"')[1].split("</table>")[0]
    assert re.findall(r"<th scope=\"col\">([^<]+)</th>", table) == ["#", "A: semantic", "B: keyword"]
    rows = re.findall(r"<tr><td class=\"rank\">(\d+)</td>(.*?)</tr>", table, re.S)
    assert [int(r) for r, _ in rows] == list(range(1, len(rows) + 1)) and 1 <= len(rows) <= 4
    for _, cells in rows:  # each rank: A's cell, then B's
        assert re.findall(r'data-run="([AB])"', cells) == ["A", "B"]
    # A hit's arm ranks sit under its text instead of a column per arm.
    assert re.search(r"(memory|fact|\w+) · score \d\.\d{4} · (semantic|keyword) #1", html.unescape(table))


def test_a_single_run_marks_nothing(admin_client, bank):
    memory_retain(bank=bank, text="Alice plays jazz piano every night.", actor="test")
    page = admin_client.get("/banks/user-alice/recall/", {"q": "jazz piano"}).content.decode()
    assert "rank-move" not in page.split("playground-results")[1]
