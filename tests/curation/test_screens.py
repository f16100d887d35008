"""Every operator screen: renders for the right roles, 404 for banks not granted, mutations go through
the services and leave audit events, HTMX gets partials."""

from __future__ import annotations

import pytest
from django.test import Client

from banks.models import ApiToken, AuditEvent, BankMembership, Job, Memory, MentalModel, Observation
from banks.services.directives import directive_create
from banks.services.memories import memory_retain
from banks.services.mental_models import mental_model_create
from banks.services.observations import observation_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(django_user_model):
    user = django_user_model.objects.create_superuser(username="root", password="pw")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def filled(bank):
    a = memory_retain(bank=bank, text="Alice Smith likes jazz and blues.", actor="test", tags=["music"]).memory
    b = memory_retain(bank=bank, text="Alice Smith likes jazz and blues music.", actor="test", tags=["music"]).memory
    memory_retain(bank=bank, text="Bob repairs bicycles.", actor="test", tags=["hobby"])
    mental_model_create(bank=bank, model_id="prefs", title="Preferences", content="## Music\n\nJazz.", actor="test")
    directive_create(bank=bank, rule_text="Answer briefly.", directive_id="brief", actor="test")
    observation_create(bank=bank, text="Alice loves jazz.", actor="test", source_ids=[a.memory_id])
    return {"a": a, "b": b}


PAGES = ["/", "/banks/user-alice/", "/banks/user-alice/memories/", "/banks/user-alice/memories/?q=jazz",
         "/banks/user-alice/memories/?tags=music&state=all", "/banks/user-alice/observations/",
         "/banks/user-alice/models/", "/banks/user-alice/models/prefs/", "/banks/user-alice/directives/",
         "/banks/user-alice/graph/", "/banks/user-alice/map/", "/banks/user-alice/time/?q=jazz", "/banks/user-alice/transfer/",
         "/audit/", "/tokens/", "/v1/docs"]


@pytest.mark.parametrize("url", PAGES)
def test_every_screen_renders(admin_client, filled, url):
    response = admin_client.get(url)
    assert response.status_code == 200, url
    assert "Traceback" not in response.content.decode()


def test_memory_detail_shows_near_duplicates_citations_and_history(admin_client, filled):
    page = admin_client.get(f"/banks/user-alice/memories/{filled['a'].memory_id}/").content.decode()
    assert filled["b"].memory_id in page  # near-duplicate
    assert "Alice loves jazz." in page  # cited by an observation
    assert "memory.retain" in page


def test_viewer_sees_but_cannot_change_and_other_banks_are_404(operator_client, operator, bank, make_bank, filled):
    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    make_bank("secret-bank")
    assert operator_client.get("/banks/user-alice/memories/").status_code == 200
    assert operator_client.get("/banks/secret-bank/").status_code == 404
    assert operator_client.get("/banks/secret-bank/memories/").status_code == 404
    response = operator_client.post("/banks/user-alice/memories/new", {"text": "sneaky"})
    assert response.status_code == 403
    assert not Memory.objects.filter(text="sneaky").exists()


def test_retain_edit_archive_restore_forget_through_the_ui(admin_client, bank):
    admin_client.post("/banks/user-alice/memories/new", {"text": "Carol speaks Portuguese.", "tags": "lang"})
    memory = Memory.objects.get(text="Carol speaks Portuguese.")
    url = f"/banks/user-alice/memories/{memory.memory_id}"
    admin_client.post(f"{url}/edit", {"text": "Carol speaks Portuguese and Spanish.", "tags": "lang,people"})
    memory.refresh_from_db()
    assert memory.text == "Carol speaks Portuguese and Spanish." and memory.tags == ["lang", "people"]
    admin_client.post(f"{url}/state", {"action": "archive"})
    memory.refresh_from_db()
    assert memory.archived_at is not None
    admin_client.post(f"{url}/state", {"action": "restore"})
    memory.refresh_from_db()
    assert memory.archived_at is None
    admin_client.post(f"{url}/state", {"action": "forget", "compliance": "on", "reason": "erasure #1"})
    assert not Memory.objects.filter(pk=memory.pk).exists()
    actions = list(AuditEvent.objects.filter(bank=bank).values_list("action", flat=True))
    assert {"memory.retain", "memory.update", "memory.archive", "memory.restore", "memory.erase"} <= set(actions)


def test_bulk_preview_counts_then_applies_to_all_matching(admin_client, bank, filled):
    preview = admin_client.post("/banks/user-alice/memories/bulk", {"action": "archive", "scope": "all",
                                                                    "tags": "music"})
    assert "will change <strong>2 memories</strong>" in preview.content.decode()
    assert Memory.objects.live().count() == 3
    admin_client.post("/banks/user-alice/memories/bulk", {"action": "archive", "scope": "all", "tags": "music",
                                                          "confirm": "yes"})
    assert Memory.objects.live().count() == 1
    admin_client.post("/banks/user-alice/memories/bulk", {"action": "tag", "tag": "kept", "ids": [
        m.memory_id for m in Memory.objects.live()], "confirm": "yes"})
    assert Memory.objects.live().get().tags == ["hobby", "kept"]
    # Tagging again would change nothing, and the preview says so; restoring says exactly how many.
    again = admin_client.post("/banks/user-alice/memories/bulk", {"action": "tag", "tag": "kept", "scope": "all"})
    assert "Nothing to tag" in again.content.decode()
    restore = admin_client.post("/banks/user-alice/memories/bulk", {"action": "restore", "scope": "all",
                                                                    "state": "all"})
    assert "will change <strong>2 memories</strong>" in restore.content.decode()


def test_bulk_forget_needs_a_reason(admin_client, bank, filled):
    response = admin_client.post("/banks/user-alice/memories/bulk", {"action": "forget", "scope": "all",
                                                                     "confirm": "yes"})
    assert response.status_code == 422 and "Say why these memories are forgotten." in response.content.decode()
    assert Memory.objects.live().count() == 3
    response = admin_client.post("/banks/user-alice/memories/bulk", {"action": "forget", "scope": "all",
                                                                     "tags": "hobby", "reason": "test data",
                                                                     "confirm": "yes"})
    assert response.status_code == 302 and response["Location"].endswith("?tags=hobby")
    assert Memory.objects.live().count() == 2


def test_merge_keeps_provenance(admin_client, filled):
    a, b = filled["a"], filled["b"]
    admin_client.post(f"/banks/user-alice/memories/{a.memory_id}/merge", {"merge": [b.memory_id]})
    b.refresh_from_db()
    a.refresh_from_db()
    assert b.archived_at is not None and b.merged_into_id == a.pk
    assert a.metadata["merged_from"] == [b.memory_id]


def test_model_block_edit_sends_a_delta_and_diff_shows_it(admin_client, filled):
    admin_client.post("/banks/user-alice/models/prefs/edit", {"op": "replace_block", "section_id": "music",
                                                              "index": "0", "block_type": "paragraph",
                                                              "text": "Jazz and blues.", "revision": "1"})
    model = MentalModel.objects.get(model_id="prefs")
    assert model.revision == 2 and "Jazz and blues." in model.content
    assert model.revisions.get(number=2).operations[0]["op"] == "replace_block"
    page = admin_client.get("/banks/user-alice/models/prefs/?from=1&to=2").content.decode()
    assert '<span class="del">Jazz.</span>' in page and '<span class="add">Jazz and blues.</span>' in page
    stale = admin_client.post("/banks/user-alice/models/prefs/edit", {
        "op": "append_block", "section_id": "music", "text": "x", "revision": "1"}, follow=True)
    assert "is at revision 2, not 1" in stale.content.decode()
    admin_client.post("/banks/user-alice/models/prefs/action", {"action": "revert", "to": "1"})
    # Revision 1's content comes back exactly as it was first stored.
    assert MentalModel.objects.get(model_id="prefs").content == "## Music\n\nJazz."


def test_directive_authoring_and_deactivation(admin_client, bank):
    admin_client.post("/banks/user-alice/directives/save", {"rule_text": "Always answer in Portuguese."})
    directive = MentalModel.objects.get(kind="directive")
    admin_client.post("/banks/user-alice/directives/save", {"directive_id": directive.model_id,
                                                            "action": "deactivate"})
    directive.refresh_from_db()
    assert directive.is_active is False


def test_observation_create_and_invalidate(admin_client, filled):
    admin_client.post("/banks/user-alice/observations/save", {"text": "Bob fixes things.", "source_ids": "",
                                                              "confidence": "0.8"})
    row = Observation.objects.get(text="Bob fixes things.")
    admin_client.post("/banks/user-alice/observations/save", {"observation_id": row.observation_id,
                                                              "action": "invalidate"})
    row.refresh_from_db()
    assert row.invalidated_at is not None


def test_token_secret_is_shown_once_and_revoke_works(admin_client, bank):
    admin_client.post("/tokens/new", {"name": "agent", "banks": "user-*", "permissions": ["read", "write"]})
    first = admin_client.get("/tokens/").content.decode()
    token = ApiToken.objects.get()
    assert f"mh_{token.prefix}_" in first
    assert f"mh_{token.prefix}_" not in admin_client.get("/tokens/").content.decode()
    admin_client.post(f"/tokens/{token.prefix}/revoke")
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_operator_cannot_grant_more_than_they_hold(operator_client, operator, bank):
    BankMembership.objects.create(user=operator, bank=bank, role="viewer")
    response = operator_client.post("/tokens/new", {"name": "x", "banks": "user-alice",
                                                    "permissions": ["write"]})
    assert response.status_code == 403
    assert operator_client.post("/tokens/new", {"name": "x", "banks": "*", "permissions": ["read"]}
                                ).status_code == 403


def test_audit_csv_export(admin_client, filled):
    response = admin_client.get("/audit.csv?bank=user-alice")
    body = b"".join(response.streaming_content).decode()
    assert body.splitlines()[0] == "time,actor,action,bank,targets,reason,compliance"
    assert "memory.retain" in body


def test_htmx_gets_partials(admin_client, filled):
    partial = admin_client.get("/banks/user-alice/memories/", HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="memory-results"') and "<html" not in partial
    full = admin_client.get("/banks/user-alice/memories/").content.decode()
    assert "<html" in full


def test_memory_list_query_count_does_not_grow_with_the_bank(admin_client, bank, django_assert_max_num_queries):
    for i in range(120):
        memory_retain(bank=bank, text=f"distinct fact number {i} about item {i * 13}", actor="test",
                      extract_entities=False, near_dedup=False)
    # 14 with the shared database cache: the cached list total is one SELECT on the cache table, and the
    # filters' choices are cached under the bank's last audited change (one index probe).
    with django_assert_max_num_queries(14):
        response = admin_client.get("/banks/user-alice/memories/")
    assert response.status_code == 200 and "Older →" in response.content.decode()


def test_keyset_pagination_walks_every_memory_once(admin_client, bank):
    for i in range(120):
        memory_retain(bank=bank, text=f"fact {i} unique {i * 7}", actor="test", extract_entities=False,
                      near_dedup=False)
    from banks.selectors.memories import MemoryFilters, memory_page

    seen, cursor = [], None
    while True:
        page = memory_page(bank, MemoryFilters(), after=cursor, limit=50)
        seen += [m.memory_id for m in page.rows]
        cursor = page.next_cursor
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 120


def test_near_duplicate_review_merges_and_dismisses(admin_client, bank, filled, django_capture_on_commit_callbacks):
    def find_again():  # the page's button; the job runs in-process here (tests/banks has it on a worker)
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post("/banks/user-alice/duplicates/scan", {"threshold": "0.7"})
        assert response.status_code == 302
        return Job.objects.filter(kind="duplicates").latest("pk")

    assert filled["a"].memory_id not in admin_client.get("/banks/user-alice/duplicates/?threshold=0.8"
                                                         ).content.decode()  # nothing scanned yet
    assert find_again().result["full"] is True
    page = admin_client.get("/banks/user-alice/duplicates/?threshold=0.8").content.decode()
    assert filled["a"].memory_id in page and filled["b"].memory_id in page
    admin_client.post("/banks/user-alice/duplicates/action", {"action": "dismiss", "threshold": "0.8",
                                                              "ids": [filled["a"].memory_id, filled["b"].memory_id]})
    assert filled["b"].memory_id not in admin_client.get("/banks/user-alice/duplicates/?threshold=0.8"
                                                         ).content.decode()
    c = memory_retain(bank=bank, text="Bob repairs old bicycles.", actor="test").memory
    job = find_again()
    assert job.state == "succeeded" and job.result["full"] is False
    assert job.result["scanned"] == 1  # only what was added since
    page = admin_client.get("/banks/user-alice/duplicates/?threshold=0.7").content.decode()
    assert c.memory_id in page
    bob = Memory.objects.get(text="Bob repairs bicycles.")
    admin_client.post("/banks/user-alice/duplicates/action", {"action": "merge", "confirm": "1",
                                                              "ids": [bob.memory_id, c.memory_id]})
    c.refresh_from_db()
    assert c.archived_at is not None and c.merged_into_id == bob.pk


def test_graph_alias_link_and_unlink(admin_client, bank):
    from banks.models import Entity, EntityLink

    memory_retain(bank=bank, text="Alice Smith met Alice Johnson.", actor="test")
    a, b = Entity.objects.get(name="Alice Smith"), Entity.objects.get(name="Alice Johnson")
    admin_client.post("/banks/user-alice/graph/link", {"entity_a": b.entity_id, "entity_b": a.entity_id,
                                                       "link_type": "alias_of"})
    link = EntityLink.objects.get()
    a.refresh_from_db()
    assert link.link_type == "alias_of" and "Alice Johnson" in a.aliases
    page = admin_client.get(f"/banks/user-alice/graph/?entity={b.entity_id}").content.decode()
    assert "alias_of" in page
    admin_client.post("/banks/user-alice/graph/link", {"action": "unlink", "link_id": link.pk,
                                                       "entity_a": b.entity_id})
    a.refresh_from_db()
    assert not EntityLink.objects.exists() and "Alice Johnson" not in a.aliases


def test_search_across_banks_and_metadata_edit(admin_client, make_bank, bank):
    other = make_bank("team-ops")
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    mine = memory_retain(bank=other, text="The ops team likes jazz on Fridays.", actor="test").memory
    page = admin_client.get("/?recall=jazz").content.decode()
    assert "Alice likes jazz." in page and "The ops team likes jazz" in page and "team-ops" in page
    url = f"/banks/team-ops/memories/{mine.memory_id}/edit"
    admin_client.post(url, {"text": mine.text, "tags": "", "metadata": '{"room": 4}'})
    mine.refresh_from_db()
    assert mine.metadata == {"room": 4}
    response = admin_client.post(url, {"text": "An edited text to keep.", "tags": "kept", "metadata": "{broken"})
    page = response.content.decode()
    # The page comes back with what was typed and the error beside the metadata field.
    assert response.status_code == 422
    assert "not valid JSON" in page and "An edited text to keep." in page and "{broken" in page
    assert 'aria-describedby="edit-metadata_error"' in page
    mine.refresh_from_db()
    assert mine.metadata == {"room": 4} and mine.text == "The ops team likes jazz on Fridays."


def test_time_travel_says_how_many_of_how_many(admin_client, bank):
    from banks.models import Memory as M
    from banks.services.memories import memory_retain as retain

    for i in range(203):
        retain(bank=bank, text=f"Numbered memory {i} about topic {i * 7}.", actor="test", near_dedup=False)
    assert M.objects.count() == 203
    page = admin_client.get("/banks/user-alice/time/").content.decode()
    assert "Added (latest 200 of 203)" in page


def test_import_preview_is_the_only_way_in_and_says_would(admin_client, bank, settings, tmp_path):
    from banks.models import Job

    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    (tmp_path / "a.ama.jsonl").write_text("")
    page = admin_client.get("/banks/user-alice/transfer/").content.decode()
    assert 'value="preview"' in page and 'name="kind" value="import"' not in page
    job = Job.objects.create(kind="import", bank=bank, state="succeeded", params={"dry_run": True, "path": "x"},
                             counts={"imported": 8, "duplicates": 1})
    page = admin_client.get(f"/banks/user-alice/jobs/{job.pk}/").content.decode()
    assert "would import 8" in page and "imported 8" not in page


def test_graph_draws_the_ego_graph_and_recentres(admin_client, bank):
    from banks.models import Entity

    memory_retain(bank=bank, text="Priya Raman runs the billing service on Postgres in Berlin.", actor="test")
    memory_retain(bank=bank, text="Priya Raman and Marcus Lee meet in Berlin on Fridays.", actor="test")
    priya = Entity.objects.get(bank=bank, name="Priya Raman")
    page = admin_client.get(f"/banks/user-alice/graph/?entity={priya.entity_id}").content.decode()
    assert '<svg class="ego graph-pic"' in page and "Around Priya Raman" in page
    berlin = Entity.objects.get(bank=bank, name="Berlin")
    assert berlin.entity_type == "LOCATION" and Entity.objects.get(bank=bank, name="Postgres").entity_type == "PRODUCT"
    assert f"?entity={berlin.entity_id}" in page and 'class="node node-memory"' in page
    assert "re-centre on Marcus Lee" in page
    again = admin_client.get(f"/banks/user-alice/graph/?entity={berlin.entity_id}").content.decode()
    assert "Around Berlin" in again and "re-centre on Priya Raman" in again


def test_reflect_playground_answers_with_cited_memories(admin_client, filled):
    page = admin_client.get("/banks/user-alice/reflect/?q=what+music+does+Alice+like").content.decode()
    assert "Cited memories" in page and (filled["a"].memory_id in page or filled["b"].memory_id in page)
    assert "jazz" in page.split('id="answer-h"')[1]


def test_bank_delete_needs_the_typed_id_and_the_admin_role(admin_client, operator_client, operator, bank, filled):
    BankMembership.objects.create(user=operator, bank=bank, role="curator")
    assert operator_client.post("/banks/user-alice/delete", {"confirm": "user-alice", "reason": "x"}
                                ).status_code == 403
    wrong = admin_client.post("/banks/user-alice/delete", {"confirm": "user-alic", "reason": "cleanup"})
    assert wrong.status_code == 422 and "Type user-alice exactly" in wrong.content.decode()
    assert Memory.objects.filter(bank__bank_id="user-alice").exists()
    done = admin_client.post("/banks/user-alice/delete", {"confirm": "user-alice", "reason": "cleanup"})
    assert done.status_code == 302
    assert not Memory.objects.filter(bank__bank_id="user-alice").exists()
    assert AuditEvent.objects.filter(action="bank.delete", reason="cleanup").exists()


@pytest.mark.parametrize(("url", "post", "kept", "error"), [
    ("/banks/user-alice/models/new", {"model_id": "", "title": "A typed title", "content": "## Kept"},
     "A typed title", "This field is required."),
    ("/banks/user-alice/directives/save", {"rule_text": "A typed rule", "priority": "high"},
     "A typed rule", "Enter a whole number."),
    ("/banks/user-alice/observations/save", {"action": "create", "text": "A typed observation",
                                             "confidence": "2"}, "A typed observation", "less than or equal to 1"),
])
def test_create_forms_keep_what_was_typed_on_an_error(admin_client, bank, url, post, kept, error):
    response = admin_client.post(url, post)
    page = response.content.decode()
    assert response.status_code == 422 and kept in page and error in page


def test_model_edits_with_bad_input_are_refused_not_500(admin_client, filled):
    url = "/banks/user-alice/models/prefs"
    bad_index = admin_client.post(f"{url}/edit", {"op": "remove_block", "section_id": "music", "index": "abc"},
                                  follow=True)
    assert bad_index.status_code == 200 and "Nothing saved" in bad_index.content.decode()
    no_heading = admin_client.post(f"{url}/edit", {"op": "add_section", "heading": "  "}, follow=True)
    assert "A section needs a heading." in no_heading.content.decode()
    no_revision = admin_client.post(f"{url}/action", {"action": "revert", "to": ""}, follow=True)
    assert "Choose the revision to go back to." in no_revision.content.decode()
    assert MentalModel.objects.get(model_id="prefs").revision == 1


def test_directive_observation_and_graph_changes_refuse_bad_input_without_500(admin_client, filled):
    bad = admin_client.post("/banks/user-alice/directives/save", {"directive_id": "brief", "action": "update",
                                                                  "rule_text": "x", "priority": "lots"}, follow=True)
    assert bad.status_code == 200 and "Nothing changed" in bad.content.decode()
    assert admin_client.post("/banks/user-alice/directives/save", {"directive_id": "nope", "action": "delete"}
                             ).status_code == 404
    obs = admin_client.post("/banks/user-alice/observations/save", {"action": "explode", "observation_id": "x"},
                            follow=True)
    assert obs.status_code == 200 and "Nothing changed" in obs.content.decode()
    link = admin_client.post("/banks/user-alice/graph/link", {"action": "unlink", "entity_a": "alice smith", "link_id": "zz"},
                             follow=True)
    assert link.status_code == 200 and "Nothing changed" in link.content.decode()
