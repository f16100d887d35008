from __future__ import annotations

import pytest

from banks.models import AuditEvent, MentalModelRevision

pytestmark = pytest.mark.django_db

BANK = {"bank_id": "user-alice"}


def create(api, **extra):
    body = {**BANK, "model_id": "preferences-v1", "title": "Alice's preferences",
            "content": "Alice prefers async communication, dark mode, and Python over Go.",
            "scope": "bank", "source_ids": ["mem-1", "mem-2", "mem-3"], **extra}
    response = api.post("/v1/mental-models", body)
    assert response.status_code == 200, response.content
    return response.json()


def test_create_get_list_like_astrocyte(api):
    model = create(api)
    assert {"model_id", "bank_id", "title", "content", "scope", "source_ids", "revision", "refreshed_at", "kind",
            "structured_doc", "source_timestamps"} <= set(model)
    assert model["revision"] == 1 and model["kind"] == "general"
    assert model["structured_doc"]["sections"][0]["id"] == "overview"
    got = api.get("/v1/mental-models/preferences-v1", BANK).json()
    assert got["content"] == model["content"]
    listed = api.get("/v1/mental-models", {**BANK, "scope": "bank"}).json()
    assert [m["model_id"] for m in listed["models"]] == ["preferences-v1"]
    assert api.get("/v1/mental-models/nope", BANK).status_code == 404
    assert api.get("/v1/mental-models/nope", BANK).json()["detail"] == "mental model not found"


def test_create_with_documented_sections_shape(api):
    model = create(api, content=None, sections=[
        {"title": "Communication", "content": "Prefers async stand-ups."},
        {"title": "Tools", "content": "Python for data work; VS Code."},
    ])
    assert [s["id"] for s in model["structured_doc"]["sections"]] == ["communication", "tools"]
    assert model["content"].startswith("## Communication\n\nPrefers async stand-ups.")


def test_create_again_is_an_upsert_with_a_new_revision(api):
    create(api)
    again = create(api, content="Changed.")
    # Content comes back exactly as sent; the structure is a separate view of it.
    assert again["revision"] == 2 and again["content"] == "Changed."
    assert again["structured_doc"]["sections"][0]["id"] == "overview"
    fetched = api.get("/v1/mental-models/preferences-v1", BANK).json()
    listed = api.get("/v1/mental-models", BANK).json()["models"][0]
    assert fetched["content"] == listed["content"] == "Changed."


def test_content_is_returned_byte_for_byte_on_every_route(api):
    text = "plain text content\n\n  with indentation and a trailing space "
    assert create(api, content=text)["content"] == text
    refreshed = api.post("/v1/mental-models/preferences-v1/refresh", {**BANK, "content": text + "!"}).json()
    assert refreshed["content"] == text + "!"
    reverted = api.post("/v1/mental-models/preferences-v1/revert", {**BANK, "revision": 1}).json()
    assert reverted["content"] == text


def test_refresh_rebuilds_structure_so_later_deltas_keep_the_refreshed_text(api):
    create(api)
    refreshed = api.post("/v1/mental-models/preferences-v1/refresh", {
        **BANK, "content": "# Tools\n\nUpdated: Alice now prefers Slack over email.", "source_ids": ["mem-7"]}).json()
    assert refreshed["revision"] == 2 and refreshed["source_ids"] == ["mem-7"]
    assert refreshed["structured_doc"]["sections"][0]["id"] == "tools"
    updated = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "append_block", "section_id": "tools", "block": {"type": "paragraph", "text": "Uses Cursor."}}]}).json()
    assert "Slack over email" in updated["model"]["content"] and "Uses Cursor." in updated["model"]["content"]
    assert api.post("/v1/mental-models/missing/refresh", {**BANK, "content": "x"}).status_code == 404


def test_delta_update_reports_applied_and_skipped(api):
    create(api, content=None, sections=[{"title": "Tools", "content": "Python; VS Code"}])
    response = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "replace_block", "section_id": "tools", "block_index": 0,
         "new_content": "Python for data work; Cursor IDE."},
        {"op": "remove_block", "section_id": "tools", "index": 5},
        {"op": "add_section", "heading": "Goals"},
    ]})
    body = response.json()
    assert response.status_code == 200
    assert body["revision"] == 2 and body["changed"] is True
    assert body["applied"] == body["applied_ops"] and len(body["applied"]) == 2
    assert body["skipped"] == [{"op": "remove_block", "section_id": "tools", "index": 5,
                                "reason": "index out of range: 5 >= 1"}]
    assert "Cursor IDE" in body["model"]["content"]
    revision = MentalModelRevision.objects.get(model__model_id="preferences-v1", number=2)
    assert revision.action == "update" and revision.operations[2] == {"op": "add_section", "heading": "Goals"}


def test_schema_error_rejects_everything(api):
    create(api)
    response = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "add_section", "heading": "Fine"}, {"op": "replace_block", "section_id": "overview"}]})
    assert response.status_code == 400
    body = response.json()
    assert "operations[1].index: Field required" in body["detail"]
    assert body["changed"] is False and body["applied"] == []
    assert api.get("/v1/mental-models/preferences-v1", BANK).json()["revision"] == 1


def test_a_change_that_applies_nothing_writes_no_revision(api):
    create(api)
    body = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "remove_section", "section_id": "nope"}]}).json()
    assert body["changed"] is False and body["revision"] == 1


def test_stale_revision_is_a_409(api):
    create(api)
    ops = [{"op": "add_section", "heading": "Goals"}]
    assert api.post("/v1/mental-models/preferences-v1/update",
                    {**BANK, "operations": ops, "expected_revision": 1}).status_code == 200
    stale = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": ops, "expected_revision": 1})
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "conflict" and stale.json()["current_revision"] == 2


def test_revisions_diff_and_revert(api):
    create(api, content="# Tools\n\nPython")
    api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "replace_block", "section_id": "tools", "index": 0, "block": {"type": "paragraph", "text": "Go"}}]})
    revisions = api.get("/v1/mental-models/preferences-v1/revisions", BANK).json()["revisions"]
    assert [r["revision"] for r in revisions] == [2, 1]
    first = api.get("/v1/mental-models/preferences-v1/revisions/1", BANK).json()
    assert first["content"] == "# Tools\n\nPython"  # as sent
    diff = api.get("/v1/mental-models/preferences-v1/diff", {**BANK, "from": 1, "to": 2}).json()
    assert "-Python" in diff["unified"] and "+Go" in diff["unified"]
    assert {"kind": "replace", "left": "Python", "right": "Go", "left_no": 3, "right_no": 3} in diff["rows"]
    assert diff["sections_changed"] == ["tools"]
    reverted = api.post("/v1/mental-models/preferences-v1/revert", {**BANK, "revision": 1}).json()
    assert reverted["revision"] == 3 and reverted["content"] == "# Tools\n\nPython"
    assert MentalModelRevision.objects.filter(model__model_id="preferences-v1").count() == 3


def test_delete_is_soft_and_never_404(api):
    create(api)
    assert api.delete("/v1/mental-models/preferences-v1", BANK).json() == {"deleted": True}
    assert api.delete("/v1/mental-models/preferences-v1", BANK).json() == {"deleted": False}
    assert api.get("/v1/mental-models/preferences-v1", BANK).status_code == 404
    assert AuditEvent.objects.filter(action="mental_model.delete").count() == 1
    # Re-creating continues the history instead of starting over.
    assert create(api)["revision"] == 2


def _blocks(model: dict) -> list[dict]:
    return [b for s in model["structured_doc"]["sections"] for b in s["blocks"]]


def test_blocks_are_addressed_by_stable_ids_over_rest(api):
    model = create(api, content="## Tools\n\nPython\n\nVS Code\n\n## People\n\nAlice\n")
    ids = [b["id"] for b in _blocks(model)]
    assert len(set(ids)) == 3 and all(ids)
    assert [b["id"] for b in _blocks(api.get("/v1/mental-models/preferences-v1", BANK).json())] == ids

    # Someone inserts at the top of the section: the index of "VS Code" moves, its id does not.
    moved = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "insert_block", "section_id": "tools", "index": 0, "block": {"type": "paragraph", "text": "Rust"}}]})
    assert moved.status_code == 200 and moved.json()["revision"] == 2
    edited = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "replace_block", "block_id": ids[1], "block": {"type": "paragraph", "text": "Cursor"}}]})
    assert edited.status_code == 200, edited.content
    assert edited.json()["applied"] == [{"op": "replace_block", "block_id": ids[1], "section_id": "tools"}]
    blocks = _blocks(edited.json()["model"])
    assert [(b["id"], b["text"]) for b in blocks if b["id"] in ids] == [
        (ids[0], "Python"), (ids[1], "Cursor"), (ids[2], "Alice")]

    # A refresh that leaves a block's text alone keeps its id; the history keeps the ids of its time.
    refreshed = api.post("/v1/mental-models/preferences-v1/refresh", {
        **BANK, "content": "## Tools\n\nPython\n\nZed\n\n## People\n\nAlice\n"}).json()
    after = {b["text"]: b["id"] for b in _blocks(refreshed)}
    assert after["Python"] == ids[0] and after["Alice"] == ids[2] and after["Zed"] not in ids
    old = api.get("/v1/mental-models/preferences-v1/revisions/3", BANK).json()
    assert ids[1] in [b["id"] for b in _blocks(old)]
    reverted = api.post("/v1/mental-models/preferences-v1/revert", {**BANK, "revision": 3}).json()
    assert [b["id"] for b in _blocks(reverted)] == [b["id"] for b in _blocks(old)]


def test_a_stale_block_id_is_a_409_naming_it_and_nothing_is_written(api):
    model = create(api, content="## Tools\n\nPython\n")
    block_id = _blocks(model)[0]["id"]
    assert api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "remove_block", "block_id": block_id}]}).status_code == 200
    stale = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "append_block", "section_id": "tools", "block": {"type": "paragraph", "text": "x"}},
        {"op": "replace_block", "block_id": block_id, "block": {"type": "paragraph", "text": "Go"}}]})
    assert stale.status_code == 409
    body = stale.json()
    assert body["detail"].startswith(f"operations[1].block_id: unknown block '{block_id}'")
    assert body["block_id"] == block_id and body["operation"] == 1 and body["changed"] is False
    assert api.get("/v1/mental-models/preferences-v1", BANK).json()["revision"] == 2
    bad = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "remove_block", "block_id": "has space"}]})
    assert bad.status_code == 400 and "operations[0].block_id" in bad.json()["detail"]


def test_a_model_stored_before_block_ids_shows_derived_ids_and_keeps_them(api):
    from banks.models import MentalModel

    create(api, content="## Tools\n\nPython\n\nGo\n")
    row = MentalModel.objects.get(model_id="preferences-v1")
    legacy = {"version": 1, "sections": [{"id": "tools", "heading": "Tools", "level": 2, "blocks": [
        {"type": "paragraph", "text": "Python"}, {"type": "paragraph", "text": "Go"}]}]}
    MentalModel.objects.filter(pk=row.pk).update(structured_doc=legacy)
    shown = [b["id"] for b in _blocks(api.get("/v1/mental-models/preferences-v1", BANK).json())]
    assert shown == [b["id"] for b in _blocks(api.get("/v1/mental-models/preferences-v1", BANK).json())]
    updated = api.post("/v1/mental-models/preferences-v1/update", {**BANK, "operations": [
        {"op": "remove_block", "block_id": shown[0]}]})
    assert updated.status_code == 200
    assert [b["id"] for b in _blocks(updated.json()["model"])] == [shown[1]]
    assert MentalModel.objects.get(pk=row.pk).structured_doc["sections"][0]["blocks"][0]["id"] == shown[1]


def test_the_seed_python_calls_work_over_rest(api):
    """create_mental_model(name=..., sections=[{title, content}]) without an id, then update_mental_model
    with the seed's op shape, whose result it reads as applied_ops / skipped_ops."""
    created = api.post("/v1/mental-models", {**BANK, "name": "Alice's preferences", "sections": [
        {"title": "Communication", "content": "Prefers async stand-ups."},
        {"title": "Tools", "content": "Python for data work; VS Code."}]})
    assert created.status_code == 200, created.content
    assert created.json()["model_id"] == "model:alice-s-preferences" and created.json()["title"] == "Alice's preferences"
    updated = api.post("/v1/mental-models/model:alice-s-preferences/update", {**BANK, "operations": [
        {"op": "replace_block", "section_id": "tools", "block_index": 0,
         "new_content": "Python for data work; Cursor IDE."}]})
    assert updated.status_code == 200, updated.content
    assert updated.json()["applied_ops"] == [{"op": "replace_block", "section_id": "tools", "index": 0}]
    assert updated.json()["skipped_ops"] == [] and updated.json()["revision"] == 2
    again = api.post("/v1/mental-models", {**BANK, "name": "Alice's preferences", "content": "Replaced."})
    assert again.json()["model_id"] == "model:alice-s-preferences" and again.json()["revision"] == 3
    listed = api.get("/v1/mental-models", {**BANK, "scope": "bank"}).json()["models"]
    assert [m["model_id"] for m in listed] == ["model:alice-s-preferences"]
