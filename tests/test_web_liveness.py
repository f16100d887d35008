"""Web workers are replaced when a request is stuck, not while a long transfer is still moving.

`serve` runs gunicorn's sync workers, which the arbiter kills after --timeout seconds of silence.
Streamed responses and uploads report progress through memoryhub.liveness instead.
"""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import StreamingHttpResponse
from django.test import RequestFactory

from config.management.commands.serve import default_web_workers, gunicorn_command
from memoryhub import liveness
from memoryhub.middleware import StreamingLivenessMiddleware
from tests.live_process import REPO, free_port
from tests.liveness_app import STEPS


def test_sync_workers_by_default_and_threads_only_when_asked():
    sync = gunicorn_command("127.0.0.1:1", workers=3, threads=1, timeout=120)
    threaded = gunicorn_command("127.0.0.1:1", workers=3, threads=4, timeout=120)
    assert sync[sync.index("--worker-class") + 1] == "sync" and "--threads" not in sync
    assert threaded[threaded.index("--worker-class") + 1] == "gthread"
    assert threaded[threaded.index("--threads") + 1] == "4"
    assert "python:config.gunicorn_config" in sync


def test_a_moving_stream_outlives_the_timeout_and_a_silent_one_is_cut(tmp_path):
    port = free_port()
    command = gunicorn_command(f"127.0.0.1:{port}", workers=1, threads=1, timeout=2, app="tests.liveness_app:app")
    log = tmp_path / "web.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(150):
            try:
                httpx.get(f"http://127.0.0.1:{port}/live", timeout=1)
                break
            except httpx.TransportError:
                assert server.poll() is None, log.read_text()
                time.sleep(0.2)
        beating = httpx.get(f"http://127.0.0.1:{port}/beating", timeout=30)
        assert beating.status_code == 200 and len(beating.content) == STEPS * 1024, log.read_text()

        with pytest.raises(httpx.TransportError):
            # The worker is killed mid-body: the response ends short.
            httpx.get(f"http://127.0.0.1:{port}/silent", timeout=30)
        assert "WORKER TIMEOUT" in log.read_text()
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def beats(monkeypatch):
    seen: list[int] = []
    monkeypatch.setattr(liveness, "INTERVAL", 0.0)
    liveness.register(lambda: seen.append(1))
    yield seen
    liveness.register(None)


def test_streamed_responses_beat_per_chunk(beats):
    middleware = StreamingLivenessMiddleware(lambda request: StreamingHttpResponse(iter([b"a", b"b", b"c"])))
    response = middleware(RequestFactory().get("/"))
    assert b"".join(response.streaming_content) == b"abc"
    assert len(beats) == 3


def test_uploads_beat_as_chunks_arrive_and_arrive_whole(beats, settings):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    data = b"0123456789" * 100_000  # 1 MB: several 64 kB chunks, kept on disk by the next handler
    request = RequestFactory().post("/", {"archive": SimpleUploadedFile("a.jsonl", data)})
    upload = request.FILES["archive"]
    assert upload.read() == data
    assert len(beats) >= len(data) // (64 * 1024)


def test_nothing_is_told_outside_a_web_worker():
    liveness.register(None)
    liveness.beat()  # no worker to tell: nothing happens, nothing fails


@pytest.mark.django_db
def test_imports_and_exports_served_in_a_request_beat_as_they_go(beats, make_bank, tmp_path, monkeypatch):
    """A REST import or export without ``async`` runs in the web worker: it reports each batch, so a
    big one is not cut at the request timeout while it is still moving."""
    import json

    from portability.formats.registry import open_archive
    from portability.services import archive_export, archive_import, exporter

    bank = make_bank("beating")
    path = tmp_path / "in.ama.jsonl"
    path.write_text(json.dumps({"_ama_version": 1, "bank_id": "x", "memory_count": 30}) + "\n" + "".join(
        json.dumps({"id": f"b{i}", "text": f"beating import line {i}"}) + "\n" for i in range(30)))
    _, _, records = open_archive(path)
    archive_import(bank=bank, records=records, actor="test", extract_entities=False, batch_size=10)
    assert len(beats) == 3
    monkeypatch.setattr(exporter, "CHUNK", 10)
    archive_export(bank=bank, dest=tmp_path / "out.ama.jsonl", actor="test")
    assert len(beats) == 6


def test_web_workers_are_fewer_beside_the_embedded_database():
    # The embedded database shares the cores: cores + 1 (docs/operations.md); a remote one: 2 x cores + 1.
    assert default_web_workers(2, database_here=True) == 3
    assert default_web_workers(2, database_here=False) == 5
    assert default_web_workers(8, database_here=True) == 9
