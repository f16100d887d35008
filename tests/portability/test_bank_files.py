"""A bank's files are the bank's: every surface reads only from the folders of banks the caller
administers, writes only into the bank's own folder, lists only those, and names paths relative to
the root in its errors. A directory export never replaces a root or anything it did not write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from banks.models import BankMembership, Job, Memory
from banks.services.memories import memory_retain
from tests.portability.fixtures import bank_folder

pytestmark = pytest.mark.django_db

SECRET = "B's launch code is 0000."


def archive(*texts: str) -> str:
    head = {"_ama_version": 1, "bank_id": "x", "exported_at": "", "provider": "p", "memory_count": len(texts)}
    return "".join(json.dumps(line) + "\n" for line in [head] + [{"id": f"m{i}", "text": t}
                                                                  for i, t in enumerate(texts)])


@pytest.fixture
def admin_client(django_user_model):
    from django.test import Client

    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    return client


@pytest.fixture
def root(settings, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(root)
    return root


@pytest.fixture
def b_export(root: Path, make_bank, api_for) -> Path:
    """Bank b-one, exported by its own admin over HTTP; and the same archive left flat in the root."""
    memory_retain(bank=make_bank("b-one"), text=SECRET, actor="test")
    owner = api_for({"b-one": ["*"]})
    response = owner.post("/v1/export", {"bank_id": "b-one", "path": str(root / "b-one-export.jsonl")})
    assert response.status_code == 200, response.content
    written = Path(response.json()["path"])
    if written != root / "b-one-export.jsonl":
        (root / "b-one-export.jsonl").write_bytes(written.read_bytes())  # a file from before the layout
    return written


def test_a_banks_export_lands_in_its_own_folder(root, b_export):
    assert b_export == bank_folder(root, "b-one") / "b-one-export.jsonl"


def test_a_token_with_admin_on_a_star_cannot_import_bank_bs_export(root, b_export, make_bank, api_for):
    make_bank("a-steal")
    thief = api_for({"a-*": ["*"]})
    (bank_folder(root, "a-steal") / "hop").symlink_to(bank_folder(root, "b-one"))
    for path in (f"{root}/b-one-export.jsonl", str(b_export), "../b-one/b-one-export.jsonl",
                 f"{root}/banks/_/a-steal/../b-one/b-one-export.jsonl", "hop/b-one-export.jsonl",
                 f"{root}/banks/_/a-steal/hop/b-one-export.jsonl", f"{root}/banks", f"{root}/banks/_"):
        for extra in ({}, {"async": True}, {"dry_run": True}):
            response = thief.post("/v1/import", {"bank_id": "a-steal", "path": path, **extra})
            assert response.status_code == 422, (path, extra, response.content)
            # Neither the server's root (unless the caller named it) nor where a symlink leads is told.
            detail = response.json()["detail"]
            assert (str(root) not in detail or path.startswith(str(root))) and "_/b-one" not in detail, detail
    assert not Memory.objects.filter(text=SECRET, bank__bank_id="a-steal").exists()
    assert not Job.objects.filter(bank__bank_id="a-steal").exists()
    recalled = thief.post("/v1/recall", {"bank_id": "a-steal", "query": "launch code"}).json()
    assert all(SECRET not in json.dumps(hit) for hit in recalled.get("results", []))


def test_a_token_with_admin_on_a_star_cannot_overwrite_bank_bs_export(root, b_export, make_bank, api_for):
    before = b_export.read_bytes()
    memory_retain(bank=make_bank("a-steal"), text="A's own memory.", actor="test")
    thief = api_for({"a-*": ["*"]})
    for path in (str(b_export), "../b-one/b-one-export.jsonl", f"{root}/banks/_/b-one/new.jsonl",
                 f"{root}/banks/_/b-one", f"{root}/banks/_", f"{root}/banks"):
        for fmt in ("ama", "markdown", "csv"):
            response = thief.post("/v1/export", {"bank_id": "a-steal", "path": path, "format": fmt})
            assert response.status_code == 422, (path, fmt, response.content)
    assert b_export.read_bytes() == before
    assert sorted(p.name for p in bank_folder(root, "b-one").iterdir()) == ["b-one-export.jsonl"]
    # The same name, flat, lands in A's own folder and leaves B's file alone.
    response = thief.post("/v1/export", {"bank_id": "a-steal", "path": f"{root}/b-one-export.jsonl"})
    assert response.status_code == 200
    assert Path(response.json()["path"]) == bank_folder(root, "a-steal") / "b-one-export.jsonl"
    assert b_export.read_bytes() == before and SECRET.encode() in (root / "b-one-export.jsonl").read_bytes()


def test_an_admin_of_both_banks_moves_memories_between_them(root, b_export, make_bank, api_for):
    make_bank("b-two")
    both = api_for({"b-one": ["admin"], "b-two": ["admin"]})
    response = both.post("/v1/import", {"bank_id": "b-two", "path": str(b_export)})
    assert response.status_code == 200 and response.json()["imported"] == 1


def test_flat_files_from_before_the_layout_are_read_by_an_admin_of_every_bank_only(root, b_export, make_bank,
                                                                                  api_for):
    make_bank("c-one")
    flat = {"bank_id": "c-one", "path": f"{root}/b-one-export.jsonl"}
    assert api_for({"c-one": ["*"]}).post("/v1/import", flat).status_code == 422
    everything = api_for({"*": ["admin"]})
    response = everything.post("/v1/import", flat)
    assert response.status_code == 200 and response.json()["imported"] == 1


def test_the_transfer_page_of_bank_a_neither_lists_nor_imports_bank_bs_files(root, b_export, make_bank, operator,
                                                                             operator_client):
    a = make_bank("a-one")
    BankMembership.objects.create(user=operator, bank=a, role="admin")
    (bank_folder(root, "a-one") / "mine.ama.jsonl").write_text(archive("A's memory."))
    page = operator_client.get("/banks/a-one/transfer/").content.decode()
    assert "mine.ama.jsonl" in page and "b-one-export" not in page
    for path in (str(b_export), f"{root}/b-one-export.jsonl", "../b-one/b-one-export.jsonl"):
        response = operator_client.post("/banks/a-one/transfer/start", {"kind": "preview", "path": path},
                                        follow=True)
        page = response.content.decode()
        assert response.status_code == 200 and '<p class="message error">' in page
    assert not Job.objects.filter(bank=a).exists()
    response = operator_client.post("/banks/a-one/transfer/start", {"kind": "preview",
                                                                    "path": str(bank_folder(root, "a-one")
                                                                                / "mine.ama.jsonl")})
    assert Job.objects.filter(bank=a, kind="import").count() == 1


@pytest.mark.parametrize("path", ["{root}", "{root}/x/..", "{root}/", "{root}/banks/..", "{root}/banks/_/b-one/.."])
def test_a_markdown_export_to_the_root_or_an_ancestor_is_refused_and_every_file_stays(root, b_export, api, bank,
                                                                                      path):
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    response = api.post("/v1/export", {"bank_id": "user-alice", "path": path.format(root=root),
                                       "format": "markdown"})
    assert response.status_code == 422, response.content
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before
    assert SECRET.encode() in b_export.read_bytes()


def test_the_command_line_refuses_a_directory_export_over_a_root_or_a_folder_it_did_not_write(root, b_export,
                                                                                              bank, tmp_path):
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    for output in (str(root), f"{root}/x/..", f"{root}/banks", f"{root}/banks/_/b-one"):
        with pytest.raises(CommandError):
            call_command("memory_export", bank="user-alice", output=output, format="markdown", root=[str(root)])
    with pytest.raises(CommandError, match="not an earlier export"):
        call_command("memory_export", bank="user-alice", output=str(root), format="markdown")  # uncontained
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before
    # A folder it wrote itself is replaced by the next export of the same name.
    call_command("memory_export", bank="user-alice", output=str(tmp_path / "md"), format="markdown")
    call_command("memory_export", bank="user-alice", output=str(tmp_path / "md"), format="markdown")
    assert len(list((tmp_path / "md").rglob("*.md"))) == 1


def test_a_hard_link_to_an_outside_file_is_not_read(root, api, tmp_path):
    outside = tmp_path / "outside.ama.jsonl"
    outside.write_text(archive(SECRET))
    os.link(outside, bank_folder(root, "user-alice") / "linked.ama.jsonl")
    response = api.post("/v1/import", {"bank_id": "user-alice",
                                       "path": str(bank_folder(root, "user-alice") / "linked.ama.jsonl")})
    assert response.status_code == 422, response.content
    assert response.json()["detail"] == ("banks/_/user-alice/linked.ama.jsonl has 2 hard links; "
                                         "a linked file is not read")
    assert not Memory.objects.filter(text=SECRET).exists()


def test_errors_name_paths_relative_to_the_root(root, api):
    detail = api.post("/v1/import", {"bank_id": "user-alice", "path": "missing.ama.jsonl"}).json()["detail"]
    assert detail == "no archive at banks/_/user-alice/missing.ama.jsonl"
    (bank_folder(root, "user-alice") / "folder").mkdir()
    detail = api.post("/v1/export", {"bank_id": "user-alice", "path": "folder"}).json()["detail"]
    assert detail == "banks/_/user-alice/folder is a directory; give a file name inside it"
    (bank_folder(root, "user-alice") / "a-file").write_text("x")
    detail = api.post("/v1/export", {"bank_id": "user-alice", "path": "a-file/x.jsonl"}).json()["detail"]
    assert detail == "banks/_/user-alice/a-file is not a directory"


def test_an_upload_whose_root_is_a_missing_folder_or_a_file_is_refused_with_a_message(admin_client, bank, root):
    from django.core.files.uploadedfile import SimpleUploadedFile

    (root / "a-file").write_text("x")
    for chosen in (str(root / "missing"), str(root / "a-file"), str(root / "a-file" / "x")):
        response = admin_client.post("/banks/user-alice/transfer/upload", {
            "archive": SimpleUploadedFile("a.ama.jsonl", b"{}\n"), "root": chosen}, follow=True)
        assert response.status_code == 200 and "Choose one of the configured roots" in response.content.decode()
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()) == ["a-file"]


def test_a_command_line_export_to_a_folder_or_a_thousand_folders_deep_is_a_clear_error(bank, tmp_path):
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    (tmp_path / "existing").mkdir()
    with pytest.raises(CommandError, match="is a directory; give a file name inside it"):
        call_command("memory_export", bank="user-alice", output=str(tmp_path / "existing"))
    deep = str(tmp_path) + "/d" * 1000 + "/x.ama.jsonl"
    with pytest.raises(CommandError, match="too deep"):
        call_command("memory_export", bank="user-alice", output=deep)
    assert list((tmp_path / "existing").iterdir()) == [] and not (tmp_path / "d").exists()


def test_a_migration_keeps_its_intermediate_archive_in_the_source_banks_folder(root, bank, monkeypatch):
    import tempfile

    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: pytest.fail("a temporary folder outside the root"))
    call_command("memory_migrate", from_bank="user-alice", to_bank="user-alice-2")
    assert Memory.objects.filter(bank__bank_id="user-alice-2").count() == 1
    assert list(bank_folder(root, "user-alice").iterdir()) == []  # made there, and removed


def test_flat_archives_move_into_the_folder_of_the_bank_they_name(root, make_bank):
    import gzip
    from io import StringIO

    make_bank("b-one")
    head = {"_ama_version": 1, "bank_id": "b-one", "exported_at": "", "provider": "p", "memory_count": 0}
    (root / "old.ama.jsonl").write_text(json.dumps(head) + "\n")
    (root / "old2.ama.jsonl.gz").write_bytes(gzip.compress((json.dumps(head) + "\n").encode()))
    (root / "ghost.ama.jsonl").write_text(json.dumps({**head, "bank_id": "nobody"}) + "\n")
    (root / "notes.csv").write_text("content\nx\n")
    (root / "vault").mkdir()
    out = StringIO()
    call_command("archives_into_bank_folders", dry_run=True, stdout=out)
    assert "would move old.ama.jsonl -> banks/_/b-one/old.ama.jsonl" in out.getvalue()
    assert (root / "old.ama.jsonl").exists() and not (root / "banks").exists()
    out = StringIO()
    call_command("archives_into_bank_folders", stdout=out)
    folder = bank_folder(root, "b-one")
    assert sorted(p.name for p in folder.iterdir()) == ["old.ama.jsonl", "old2.ama.jsonl.gz"]
    assert sorted(p.name for p in root.iterdir()) == ["banks", "ghost.ama.jsonl", "notes.csv", "vault"]
    assert "left ghost.ama.jsonl: names bank 'nobody', which does not exist" in out.getvalue()
    call_command("archives_into_bank_folders", file="vault", bank="b-one", stdout=StringIO())
    call_command("archives_into_bank_folders", file="notes.csv", bank="b-one", stdout=StringIO())
    assert sorted(p.name for p in folder.iterdir()) == ["notes.csv", "old.ama.jsonl", "old2.ama.jsonl.gz", "vault"]
    with pytest.raises(CommandError, match="already exists"):
        (root / "notes.csv").write_text("again")
        call_command("archives_into_bank_folders", file="notes.csv", bank="b-one", stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("archives_into_bank_folders", file="../x", bank="b-one", stdout=StringIO())
