"""The symlink-swap race: a thread keeps exchanging a bank's folder inside the root with a symlink to a
folder outside, while exports, imports (files and Markdown folders) and uploads run through the API and
the transfer page. Nothing
is ever written outside and nothing outside is ever read in: every file is opened by descriptor from
the root down without following a symlink, so an attempt either works in the real folder or fails."""

from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from banks.models import Memory
from banks.services.memories import memory_retain
from tests.portability.fixtures import bank_folder

pytestmark = pytest.mark.django_db(transaction=True)

ATTEMPTS = {"export": 200, "import": 100, "upload": 200, "markdown_export": 50, "markdown_import": 50}
RENAME_EXCHANGE = 2
AT_FDCWD = -100
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (renameat2 RENAME_EXCHANGE): the folder's name is always taken."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


class Swapper(threading.Thread):
    def __init__(self, folder: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.folder, self.link, self.stop, self.swaps = folder, folder.with_name("swap-link"), threading.Event(), 0
        self.link.symlink_to(outside, target_is_directory=True)

    def run(self) -> None:
        while not self.stop.is_set():
            exchange(self.folder, self.link)
            self.swaps += 1

    def finish(self) -> None:
        self.stop.set()
        self.join()
        if self.folder.is_symlink():
            exchange(self.folder, self.link)


def archive(text: str) -> str:
    head = {"_ama_version": 1, "bank_id": "x", "exported_at": "", "provider": "p", "memory_count": 1}
    return json.dumps(head) + "\n" + json.dumps({"id": "race", "text": text}) + "\n"


def test_swapping_the_banks_folder_for_a_symlink_never_lets_a_file_operation_out(settings, tmp_path, bank,
                                                                                  make_token, django_user_model):
    from tests.conftest import ApiClient

    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(root)
    folder = bank_folder(root, "user-alice")
    (folder / "in.ama.jsonl").write_text(archive("A memory from inside the root."))
    (outside / "in.ama.jsonl").write_text(archive("A SECRET from outside the root."))
    for where, text in ((folder, "A note from inside the root."), (outside, "A SECRET note from outside.")):
        (where / "notes").mkdir()
        (where / "notes" / "n.md").write_text(f"---\nid: note-1\n---\n{text}\n")
    seeded = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    api = ApiClient(make_token())
    operator = Client()
    operator.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    outcomes: dict[str, list[int]] = {kind: [] for kind in ATTEMPTS}

    swapper = Swapper(folder, outside)
    swapper.start()
    try:
        for i in range(ATTEMPTS["export"]):
            response = api.post("/v1/export", {"bank_id": "user-alice", "path": f"{folder}/out-{i}.ama.jsonl"})
            outcomes["export"].append(response.status_code)
        for i in range(ATTEMPTS["import"]):
            response = api.post("/v1/import", {"bank_id": "user-alice", "path": f"{folder}/in.ama.jsonl",
                                               "on_conflict": "overwrite", "dry_run": i % 2 == 1})
            outcomes["import"].append(response.status_code)
        for i in range(ATTEMPTS["markdown_export"]):
            response = api.post("/v1/export", {"bank_id": "user-alice", "path": f"{folder}/md-{i}",
                                               "format": "markdown"})
            outcomes["markdown_export"].append(response.status_code)
        for i in range(ATTEMPTS["markdown_import"]):
            response = api.post("/v1/import", {"bank_id": "user-alice", "path": f"{folder}/notes",
                                               "on_conflict": "overwrite", "dry_run": i % 2 == 1})
            outcomes["markdown_import"].append(response.status_code)
        for i in range(ATTEMPTS["upload"]):
            response = operator.post("/banks/user-alice/transfer/upload", {
                "archive": SimpleUploadedFile(f"up-{i}.ama.jsonl", archive("uploaded").encode()), "root": str(root)})
            outcomes["upload"].append(response.status_code)
    finally:
        swapper.finish()

    assert swapper.swaps > 0
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == seeded, "written outside the root"
    assert not Memory.objects.filter(text__contains="SECRET").exists(), "a file outside the root was read in"
    assert (outside / "in.ama.jsonl").read_text() == archive("A SECRET from outside the root.")
    # Every attempt either worked in the real folder or was refused: never a server error.
    assert all(code in (200, 422) for kind in ATTEMPTS if kind != "upload" for code in outcomes[kind]), outcomes
    assert all(code == 302 for code in outcomes["upload"]), outcomes["upload"]
    assert not folder.is_symlink() and {p.name for p in folder.iterdir()} <= (
        {f"out-{i}.ama.jsonl" for i in range(ATTEMPTS["export"])} | {"in.ama.jsonl", "notes"}
        | {f"md-{i}" for i in range(ATTEMPTS["markdown_export"])}
        | {f"up-{i}.ama.jsonl" for i in range(ATTEMPTS["upload"])})
