"""The operator's import/export pages: roots only, sanitised uploads, streamed downloads, job progress."""

from __future__ import annotations

import json
import stat

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from banks.models import BankMembership, Job, Memory
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    return client


@pytest.fixture
def root(settings, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(root)
    return root


def test_upload_lands_in_the_banks_folder_with_a_safe_name(admin_client, bank, root, tmp_path):
    archive = SimpleUploadedFile("../../evil name.ama.jsonl", b'{"_ama_version": 1}\n')
    admin_client.post("/banks/user-alice/transfer/upload", {"archive": archive, "root": str(root)})
    folder = root / "banks" / "_" / "user-alice"
    assert [p.name for p in folder.iterdir()] == ["evil_name.ama.jsonl"]
    assert stat.S_IMODE((folder / "evil_name.ama.jsonl").stat().st_mode) == 0o600
    assert not (tmp_path / "evil name.ama.jsonl").exists()


def test_upload_into_a_directory_outside_the_roots_is_refused(admin_client, bank, root, tmp_path):
    response = admin_client.post("/banks/user-alice/transfer/upload", {
        "archive": SimpleUploadedFile("a.jsonl", b"x"), "root": str(tmp_path)}, follow=True)
    assert "Choose one of the configured roots" in response.content.decode()
    assert not (tmp_path / "a.jsonl").exists()


def test_upload_over_the_cap_is_refused_before_reading(admin_client, bank, root, settings):
    settings.MEMORYHUB_MAX_UPLOAD_BYTES = 10
    response = admin_client.post("/banks/user-alice/transfer/upload", {
        "archive": SimpleUploadedFile("a.jsonl", b"x" * 200_000), "root": str(root)}, follow=True)
    assert "larger than the 10 byte limit" in response.content.decode()
    assert list(root.iterdir()) == []


def test_download_streams_an_ama_archive(admin_client, bank):
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test")
    response = admin_client.get("/banks/user-alice/transfer/download")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert json.loads(lines[0])["memory_count"] == 1 and json.loads(lines[1])["text"] == "Alice likes jazz."
    assert 'filename="user-alice.ama.jsonl"' in response["Content-Disposition"]


def test_preview_then_import_through_jobs(admin_client, bank, root, django_capture_on_commit_callbacks):
    (root / "a.ama.jsonl").write_text('{"_ama_version": 1}\n{"id": "a", "text": "one"}\n{"id": "b"}\n')
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post("/banks/user-alice/transfer/start", {"kind": "preview",
                                                                          "path": str(root / "a.ama.jsonl")})
    job = Job.objects.get()
    assert response["Location"].endswith(f"/jobs/{job.pk}/")
    assert job.state == "succeeded" and job.counts["imported"] == 1 and job.counts["invalid"] == 1
    assert Memory.objects.count() == 0
    partial = admin_client.get(f"/banks/user-alice/jobs/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="job-status"') and "Run this import" in partial
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post("/banks/user-alice/transfer/start", {"kind": "import",
                                                               "path": str(root / "a.ama.jsonl")})
    assert Memory.objects.count() == 1


def test_curators_cannot_reach_the_transfer_pages(operator_client, operator, bank, root):
    BankMembership.objects.create(user=operator, bank=bank, role="curator")
    assert operator_client.get("/banks/user-alice/transfer/").status_code == 403
    assert operator_client.get("/banks/user-alice/transfer/download").status_code == 403


def test_the_transfer_page_shows_where_files_live_by_default(admin_client, bank):
    # The test settings keep the embedded default: one root under the var directory.
    from django.conf import settings

    default = str(settings.VAR_DIR / "archives")
    assert settings.MEMORYHUB_PORTABILITY_ROOTS == default
    page = admin_client.get("/banks/user-alice/transfer/").content.decode()
    assert "only in its own folder <code>banks/_/user-alice/</code> inside " in page
    assert f"<code>{default}</code>" in page
    assert "No portability roots are configured" not in page


def test_an_upload_is_received_inside_the_banks_folder_never_in_the_machines_temp(admin_client, bank, root,
                                                                                   settings, tmp_path):
    # Past Django's in-memory limit an upload is spooled to FILE_UPLOAD_TEMP_DIR: it must stay unused (here
    # it cannot even be used: it is a file, so any temporary file made there would fail the upload).
    spool = tmp_path / "machine-temp"
    spool.write_text("not a folder")
    settings.FILE_UPLOAD_TEMP_DIR = str(spool)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    body = b'{"_ama_version": 1}\n' + b"x" * 200_000
    admin_client.post("/banks/user-alice/transfer/upload", {
        "archive": SimpleUploadedFile("big.ama.jsonl", body), "root": str(root)})
    folder = root / "banks" / "_" / "user-alice"
    assert (folder / "big.ama.jsonl").read_bytes() == body
    assert sorted(p.name for p in folder.iterdir()) == ["big.ama.jsonl"]  # no temporary file left
    # Over the cap: refused, and nothing is left behind.
    settings.MEMORYHUB_MAX_UPLOAD_BYTES = 100_000
    response = admin_client.post("/banks/user-alice/transfer/upload", {
        "archive": SimpleUploadedFile("bigger.ama.jsonl", body[:100_001] + b"\n" * 10_000)}, follow=True)
    assert "larger than the 100000 byte limit" in response.content.decode()
    assert sorted(p.name for p in folder.iterdir()) == ["big.ama.jsonl"]


def test_an_upload_still_needs_the_csrf_token(bank, root, django_user_model):
    client = Client(enforce_csrf_checks=True)
    client.force_login(django_user_model.objects.create_superuser(username="root", password="pw"))
    response = client.post("/banks/user-alice/transfer/upload", {
        "archive": SimpleUploadedFile("a.ama.jsonl", b"{}\n"), "root": str(root)})
    assert response.status_code == 403
    assert not (root / "banks" / "_" / "user-alice" / "a.ama.jsonl").exists()
