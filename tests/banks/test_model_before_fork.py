"""The local model loaded once in gunicorn's master and shared by the workers it forks
(banks.providers.embeddings.load_before_fork, config.gunicorn_config.when_ready)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from banks.models import Bank
from banks.providers import embeddings
from banks.providers.minilm import MiniLMEmbedder
from banks.services.tokens import token_create
from config import gunicorn_config
from config.management.commands.serve import gunicorn_command
from tests.fakes import FakeOpenAI, local_server
from tests.live_process import pid_running, server_env, wait_until
from tests.worker import _database_url

REPO = Path(__file__).resolve().parents[2]

# Run in an interpreter of its own: the tokenizer's thread pool is process-wide, and any earlier test
# in this process may have started it. The parent loads the model, forks, and the child embeds with
# the parent's session (building another one fails); the parent then embeds the same text after it.
FORKED = textwrap.dedent("""
    import json, os, sys, traceback
    from banks.providers import minilm_onnx
    from banks.providers.minilm import MiniLMEmbedder

    runtime = sys.argv[1]
    model = MiniLMEmbedder(threads=1, runtime=runtime, weights="auto")
    model.load_now()
    text = "Alice moved the billing cluster to the new region on 3 March."
    read, write = os.pipe()
    errors = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    pid = os.fork()
    if pid == 0:
        os.dup2(errors, 2)

        def no_second_load(*args, **kwargs):
            raise AssertionError("the child loaded the model again")

        minilm_onnx.OnnxForward.__init__ = no_second_load
        MiniLMEmbedder._load_weights = no_second_load
        try:
            with os.fdopen(write, "w") as out:
                json.dump(model.embed_one(text), out)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as child_out:
        child = child_out.read()
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"status": status, "child": json.loads(child) if child else None,
                      "parent": model.embed_one(text), "runtime": model.runtime}))
""")


@pytest.mark.parametrize("runtime", ["auto", "numpy"])
def test_a_worker_forked_after_the_load_embeds_with_the_masters_model(runtime: str, tmp_path: Path) -> None:
    errors = tmp_path / "child-stderr.txt"
    done = subprocess.run([sys.executable, "-c", FORKED, runtime, str(errors)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 0, errors.read_text()
    assert result["child"] is not None
    # The child's vector is the parent's: it ran the same, already loaded, model.
    assert max(abs(a - b) for a, b in zip(result["child"], result["parent"], strict=True)) < 1e-6
    assert errors.read_text() == ""  # nothing said: no warning, no second load


def test_a_local_model_on_the_calling_thread_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    model = MiniLMEmbedder(threads=1)
    monkeypatch.setattr(embeddings, "get_embedder", lambda spec=None: model)
    assert embeddings.load_before_fork() == f"all-MiniLM-L6-v2 ({model.runtime}, {model.weights} weights)"
    assert model._loaded


def test_a_model_on_thread_pools_is_left_to_each_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    # ONNX Runtime's threads, started in the master, would not exist in a forked worker.
    model = MiniLMEmbedder(threads=2)
    monkeypatch.setattr(embeddings, "get_embedder", lambda spec=None: model)
    assert embeddings.load_before_fork() is None
    assert not model._loaded


def test_remote_and_hashing_embedders_load_nothing() -> None:
    assert embeddings.load_before_fork("hashing") is None
    FakeOpenAI.requests = []
    with local_server(FakeOpenAI) as url:
        assert embeddings.load_before_fork(f"openai:text-embedding-3-small@{url}/v1") is None
    assert FakeOpenAI.requests == []  # no request reached the remote server


class _Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, message: str, *args: Any) -> None:
        self.lines.append(("info", message % args))

    def warning(self, message: str, *args: Any) -> None:
        self.lines.append(("warning", message % args))


class _Server:
    def __init__(self) -> None:
        self.log = _Log()


def test_the_masters_hook_says_what_it_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "load_before_fork", lambda: "all-MiniLM-L6-v2 (onnx, int8 weights)")
    monkeypatch.setattr(gunicorn_config, "_model_before_fork", False)  # put back after: the hook sets it
    server = _Server()
    gunicorn_config.when_ready(server)
    assert server.log.lines == [("info", "embedding model all-MiniLM-L6-v2 (onnx, int8 weights) loaded once "
                                         "for every worker")]


def test_a_failed_load_in_the_master_leaves_the_workers_to_load_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails() -> str:
        raise MemoryError("no room for the weights")

    monkeypatch.setattr(embeddings, "load_before_fork", fails)
    server = _Server()
    gunicorn_config.when_ready(server)  # the server starts all the same
    assert server.log.lines == [("warning", "the embedding model was not loaded before the workers start "
                                            "(MemoryError: no room for the weights); each worker loads its own")]


BOOTED = re.compile(r"Booting worker with pid: (\d+)")


@pytest.mark.usefixtures("transactional_db")
def test_a_leaving_web_worker_is_replaced_at_once_and_the_master_stops(tmp_path: Path) -> None:
    """gunicorn as ``serve`` runs it, with MiniLM loaded in the master: a worker that leaves (a stop, or
    ``--max-requests``: the same exit) ends at once and the master forks another. One that had not embedded
    yet used to hang in ONNX Runtime's exit handlers (config.gunicorn_config.worker_exit) until gunicorn's
    120 s timeout killed it, one worker fewer meanwhile; a stop waited 30 s and killed the rest."""
    sock, log = tmp_path / "web.sock", tmp_path / "gunicorn.log"
    env = server_env(_database_url(), MEMORYHUB_VAR_DIR=str(tmp_path / "var"), MEMORYHUB_EMBEDDINGS="minilm",
                     MEMORYHUB_EMBED_THREADS="1", MEMORYHUB_PORTABILITY_ROOTS="off")
    with log.open("wb") as out:
        master = subprocess.Popen(gunicorn_command(f"unix:{sock}", workers=1, threads=1, timeout=120), cwd=REPO,
                                  env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "loaded once for every worker" in log.read_text(errors="replace"), 180,
                   "the master did not load the model", log)
        first = int(wait_until(lambda: BOOTED.findall(log.read_text(errors="replace")), 60,
                               "no worker booted", log)[0])
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(sock))) as client:
            wait_until(lambda: client.get("http://localhost/live", timeout=10).status_code == 200, 60,
                       "the worker did not answer", log)

        os.kill(first, signal.SIGTERM)
        wait_until(lambda: not pid_running(first), 20, f"the leaving worker {first} did not end", log)
        second = int(wait_until(lambda: [p for p in BOOTED.findall(log.read_text(errors="replace"))
                                         if int(p) != first], 20, "no worker took its place", log)[0])
        # A worker that has embedded leaves too: it used to die of SIGABRT in the same exit handlers.
        bank = Bank.objects.create(bank_id="leaving-worker")
        _, secret = token_create(name="leaving-worker", actor="test",
                                 grants=[{"bank": bank.bank_id, "permissions": ["read"]}])
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(sock))) as client:
            answer = client.post("http://localhost/v1/recall", json={"query": "who moved the cluster", "bank_id":
                                 bank.bank_id}, headers={"Authorization": f"Bearer {secret}"}, timeout=60)
        assert answer.status_code == 200, answer.text

        master.send_signal(signal.SIGTERM)
        assert master.wait(timeout=20) == 0, log.read_text(errors="replace")[-4000:]
        assert not pid_running(second)
        text = log.read_text(errors="replace")
        assert "Exception during worker exit" not in text
        assert "SIGABRT" not in text and "terminate called" not in text, text[-4000:]
    finally:
        if master.poll() is None:
            os.killpg(master.pid, signal.SIGKILL)
            master.wait(timeout=30)
