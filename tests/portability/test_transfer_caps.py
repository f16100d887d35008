"""Big transfers are jobs: inside a request, an archive too big to import, a whole-bank archive too big
(or too deep a gzip bomb, or a line too long) to restore and a bank too big to export in full answer a
clear 413 asking for ``"async": true`` before the web worker is at risk; asked async, each is a job."""

from __future__ import annotations

import json
import zlib

import pytest

from banks.models import Job, Memory
from banks.services.memories import memory_retain
from tests.portability.fixtures import bank_folder


@pytest.fixture
def root(settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    return tmp_path


def _ama(path, total: int) -> None:  # noqa: ANN001
    with path.open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": total}) + "\n")
        for i in range(total):
            fp.write(json.dumps({"id": f"m{i}", "text": f"fact number {i}"}) + "\n")


def _gzip_of(path, head: bytes, filler: bytes, size: int) -> None:  # noqa: ANN001
    """A gzip file whose content is ``head`` then ``size`` bytes of ``filler``, written a piece at a time."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    piece = filler * (8 * 1024 * 1024 // len(filler))
    with path.open("wb") as out:
        out.write(compressor.compress(head))
        for _ in range(size // len(piece)):
            out.write(compressor.compress(piece))
        out.write(compressor.flush())


MHBA_HEAD = (json.dumps({"_ama_version": 1, "mhba_version": 1, "bank_id": "x", "memory_count": 1}) + "\n").encode()


@pytest.mark.django_db
def test_an_import_over_the_request_limit_is_refused_with_a_hint_and_runs_as_a_job(root, api, settings,
                                                                                  django_capture_on_commit_callbacks):
    settings.MEMORYHUB_SYNC_IMPORT_MAX_LINES = 50
    _ama(bank_folder(root, "user-alice") / "big.jsonl", 60)
    refused = api.post("/v1/import", {"bank_id": "user-alice", "path": "big.jsonl"})
    assert refused.status_code == 413, refused.content
    assert refused.json()["error"]["code"] == "too_large_for_request"
    assert '"async": true' in refused.json()["detail"] and "60 memories" in refused.json()["detail"]
    assert not Memory.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        accepted = api.post("/v1/import", {"bank_id": "user-alice", "path": "big.jsonl", "async": True})
    assert accepted.status_code == 202
    assert Job.objects.get(pk=accepted.json()["job_id"]).state == "succeeded"
    assert Memory.objects.count() == 60


@pytest.mark.django_db
def test_a_whole_bank_archive_holding_one_huge_line_is_refused_without_reading_it(root, api, bank):
    # About half a megabyte of gzip holding a 512 MiB line.
    path = bank_folder(root, "user-alice") / "line.mhba.jsonl.gz"
    _gzip_of(path, MHBA_HEAD + b'{"id": "m1", "text": "', b"a", 512 * 1024 * 1024)
    assert path.stat().st_size < 1024 * 1024
    answer = api.post("/v1/import", {"bank_id": "user-alice", "path": "line.mhba.jsonl.gz"})
    assert answer.status_code == 413, answer.content
    assert '"async": true' in answer.json()["detail"]
    assert not Memory.objects.filter(bank=bank).exists()


@pytest.mark.django_db
def test_a_gzip_bomb_is_refused_in_the_request_and_its_job_names_the_problem(root, api, bank, settings,
                                                                            django_capture_on_commit_callbacks):
    path = bank_folder(root, "user-alice") / "bomb.mhba.jsonl.gz"
    _gzip_of(path, MHBA_HEAD, b"\0", 256 * 1024 * 1024)
    answer = api.post("/v1/import", {"bank_id": "user-alice", "path": "bomb.mhba.jsonl.gz"})
    assert answer.status_code == 413, answer.content
    assert "decompresses to more than" in answer.json()["detail"]
    # As a job the cap is the server's decompression limit: the restore stops there and says why.
    settings.MEMORYHUB_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
    with django_capture_on_commit_callbacks(execute=True):
        accepted = api.post("/v1/import", {"bank_id": "user-alice", "path": "bomb.mhba.jsonl.gz", "async": True})
    assert accepted.status_code == 202
    job = Job.objects.get(pk=accepted.json()["job_id"])
    assert job.state == "failed" and "decompresses to more than" in job.message
    assert not Memory.objects.filter(bank=bank).exists()


@pytest.mark.django_db
def test_a_restore_job_refuses_a_line_over_the_line_cap(root, api, bank, settings,
                                                       django_capture_on_commit_callbacks):
    settings.MEMORYHUB_BANK_ARCHIVE_MAX_LINE_BYTES = 1024 * 1024
    path = bank_folder(root, "user-alice") / "long.mhba.jsonl.gz"
    _gzip_of(path, MHBA_HEAD + b'{"id": "m1", "text": "', b"a", 16 * 1024 * 1024)
    with django_capture_on_commit_callbacks(execute=True):
        accepted = api.post("/v1/import", {"bank_id": "user-alice", "path": "long.mhba.jsonl.gz", "async": True})
    job = Job.objects.get(pk=accepted.json()["job_id"])
    assert job.state == "failed" and "line 2" in job.message and "longer than" in job.message


@pytest.mark.django_db
def test_a_full_export_honours_async_and_a_big_one_is_not_done_in_the_request(root, api, bank, settings,
                                                                             django_capture_on_commit_callbacks):
    for i in range(12):
        memory_retain(bank=bank, text=f"exported fact {i}", actor="t")
    settings.MEMORYHUB_SYNC_EXPORT_MAX_MEMORIES = 10
    refused = api.post("/v1/export", {"bank_id": "user-alice", "path": "all.mhba.jsonl", "full": True})
    assert refused.status_code == 413 and '"async": true' in refused.json()["detail"]
    with django_capture_on_commit_callbacks(execute=True):
        accepted = api.post("/v1/export", {"bank_id": "user-alice", "path": "all.mhba.jsonl", "full": True,
                                           "async": True})
    assert accepted.status_code == 202
    job = Job.objects.get(pk=accepted.json()["job_id"])
    assert job.state == "succeeded" and job.result["full"] and job.result["exported_count"] == 12
    lines = (bank_folder(root, "user-alice") / "all.mhba.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["mhba_version"] == 1
    assert sum(1 for row in lines[1:] if "_mhba" not in json.loads(row)) == 12
