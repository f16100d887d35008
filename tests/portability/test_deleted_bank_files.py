"""A deleted bank's folder is set aside (``<root>/banks/.trash/<time>/<tenant>/<bank id>/``): a new bank of
the same id starts with no files, lists none and imports none of the old ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from banks.models import BankMembership, Memory
from banks.services.memories import memory_retain
from tests.portability.fixtures import bank_folder

pytestmark = pytest.mark.django_db
OLD = "Carol's old account number is 1234."


@pytest.fixture
def root(settings, tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(root)
    return root


def test_a_bank_made_again_after_a_deletion_finds_none_of_the_old_files(
        root, make_bank, api_for, operator, operator_client, django_capture_on_commit_callbacks):
    memory_retain(bank=make_bank("acme:gone"), text=OLD, actor="test")
    owner = api_for({"acme:*": ["*"]})
    assert owner.post("/v1/export", {"bank_id": "acme:gone", "path": "old.ama.jsonl"}).status_code == 200
    folder = root / "banks" / "acme" / "acme:gone"
    assert (folder / "old.ama.jsonl").is_file()

    with django_capture_on_commit_callbacks(execute=True):
        assert owner.delete("/v1/banks/acme:gone", {"confirm": "acme:gone"}).status_code in (200, 202, 204)
    assert not folder.exists()
    trashed = list((root / "banks" / ".trash").glob("*/acme/acme:gone/old.ama.jsonl"))
    assert len(trashed) == 1 and OLD.encode() in trashed[0].read_bytes()

    again = make_bank("acme:gone")
    BankMembership.objects.create(user=operator, bank=again, role="admin")
    page = operator_client.get("/banks/acme:gone/transfer/").content.decode()
    assert "old.ama.jsonl" not in page
    for path in ("old.ama.jsonl", str(folder / "old.ama.jsonl"), str(trashed[0]), "../../.trash"):
        response = owner.post("/v1/import", {"bank_id": "acme:gone", "path": path})
        assert response.status_code == 422, (path, response.content)
    assert not Memory.objects.filter(bank=again).exists()


def test_a_deleted_banks_folder_that_is_a_symlink_is_not_followed(root, make_bank, api, tmp_path,
                                                                 django_capture_on_commit_callbacks):
    make_bank("user-alice")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the bank's")
    folder = bank_folder(root, "user-alice")
    folder.rmdir()
    folder.symlink_to(outside)
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete("/v1/banks/user-alice", {"confirm": "user-alice"}).status_code in (200, 202, 204)
    assert (outside / "keep.txt").read_text() == "not the bank's"
    assert not (root / "banks" / ".trash").exists()
