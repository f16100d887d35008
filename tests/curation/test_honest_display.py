"""What the pages print is what is stored and what is known: metadata as JSON, and no confidence claimed
for an answer stitched from recalled sentences without a language model."""

from __future__ import annotations

import html
import json

import pytest

from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


def test_metadata_is_shown_as_json(admin_client, bank):
    memory = memory_retain(bank=bank, text="Alice likes jazz.", actor="test",
                           metadata={"customer": "c-1", "vip": True, "score": None}).memory
    page = html.unescape(admin_client.get(f"/banks/user-alice/memories/{memory.memory_id}/").content.decode())
    shown = page.split('<pre class="json"><code>')[1].split("</code>")[0]
    assert json.loads(shown) == {"customer": "c-1", "vip": True, "score": None}
    assert "'customer'" not in page and "True" not in shown


def test_ask_claims_no_confidence_for_an_extractive_answer(admin_client, bank):
    memory_retain(bank=bank, text="Alice likes jazz music.", actor="test")
    page = admin_client.get("/banks/user-alice/reflect/", {"q": "Alice likes jazz music"}).content.decode()
    assert "Alice likes jazz" in page
    assert "no language model: no confidence" in page and "confidence 100%" not in page
