"""Whole JSON documents and archive lines are bounded by the configured caps, and a document that is
cut short or over its cap is a 422 naming it over HTTP (it was a 500)."""

from __future__ import annotations

import json

import pytest

from banks.models import Memory
from tests.portability.fixtures import bank_folder


@pytest.fixture
def root(settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


CUT_SHORT = {
    "conversations.json": '[{"mapping": {}, "current_node": "x", "title": ',
    "agentos.json": '{"traces": [1, 2, ',
    "memory.json": '{"format_version": "1.1", "semantic_nodes": [',
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(CUT_SHORT))
@pytest.mark.parametrize("run_async", [False, True], ids=["inline", "async"])
def test_a_json_document_cut_short_is_a_422_naming_the_file(api, root, name, run_async):
    (bank_folder(root, "user-alice") / name).write_text(CUT_SHORT[name])
    response = api.post("/v1/import", {"bank_id": "user-alice", "path": str(root / name), "async": run_async})
    assert response.status_code == 422, response.content
    assert response.json()["detail"].startswith(f"{name}: ")
    assert Memory.objects.count() == 0


def chatgpt_document(turns: int) -> str:
    mapping = {f"n{i}": {"id": f"n{i}", "message": {
        "id": f"m{i}", "author": {"role": "user" if i % 2 == 0 else "assistant"},
        "content": {"content_type": "text", "parts": [f"Message number {i} about the quarterly invoice run."]},
        "create_time": 1_700_000_000 + i}, "parent": f"n{i - 1}" if i else None,
        "children": [f"n{i + 1}"] if i + 1 < turns else []} for i in range(turns)}
    return json.dumps([{"title": "Invoices", "create_time": 1_700_000_000, "mapping": mapping,
                        "current_node": f"n{turns - 1}", "id": "c1"}])


@pytest.mark.django_db
def test_a_json_document_over_the_configured_cap_is_refused_before_parsing(api, root, settings):
    document = chatgpt_document(6)
    (bank_folder(root, "user-alice") / "conversations.json").write_text(document)
    settings.MEMORYHUB_MAX_JSON_DOCUMENT_BYTES = len(document.encode()) - 1
    response = api.post("/v1/import", {"bank_id": "user-alice", "path": str(root / "conversations.json")})
    assert response.status_code == 422, response.content
    assert f"{len(document.encode()) - 1} byte limit" in response.json()["detail"]
    assert Memory.objects.count() == 0
    # At the cap it is read.
    settings.MEMORYHUB_MAX_JSON_DOCUMENT_BYTES = len(document.encode())
    response = api.post("/v1/import", {"bank_id": "user-alice", "path": str(root / "conversations.json")})
    assert response.status_code == 200, response.content
    assert response.json()["imported"] > 0


@pytest.mark.django_db
def test_an_archive_line_over_the_configured_cap_is_reported_and_the_rest_imported(api, root, settings):
    lines = [{"_ama_version": 1, "bank_id": "x", "exported_at": "", "provider": "p", "memory_count": 3},
             {"id": "a", "text": "A short memory."}, {"id": "b", "text": "L" * 2000}, {"id": "c", "text": "Another."}]
    (bank_folder(root, "user-alice") / "capped.ama.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    settings.MEMORYHUB_MAX_ARCHIVE_LINE_BYTES = 1000
    response = api.post("/v1/import", {"bank_id": "user-alice", "path": str(root / "capped.ama.jsonl")})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["imported"] == 2
    assert [e["line"] for e in body["line_errors"]] == [3] and "1000" in body["line_errors"][0]["reason"]
    assert sorted(Memory.objects.values_list("memory_id", flat=True)) == ["a", "c"]
