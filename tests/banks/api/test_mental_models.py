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
