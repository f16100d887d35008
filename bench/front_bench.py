"""Recall through the buffering front (config.front) against gunicorn exposed directly.

    .venv/bin/python bench/front_bench.py --memories 5000 --clients 16 --seconds 20

The same gunicorn command ``serve`` runs (sync workers), once on a TCP port and once on a Unix socket
behind the front; the same recall questions from ``--clients`` threads for ``--seconds`` each. Uses its
own embedded database under var/bench and the hashing embedder (the figures measure the web tier).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from banks.content import content_hash  # noqa: E402
from banks.models import Memory  # noqa: E402
from banks.services.banks import bank_create  # noqa: E402
from banks.services.bulk_memories import MemoryRow  # noqa: E402
from banks.services.memory_rows import rows_insert  # noqa: E402
from banks.services.tokens import token_create  # noqa: E402
from config.management.commands.serve import gunicorn_command  # noqa: E402

TOPICS = ["billing", "deploy", "oncall", "pager", "release", "invoice", "customer", "refund", "latency", "backup"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def populate(n: int) -> None:
    bank = bank_create(bank_id="front-bench", actor="bench", get_existing=True)
    have = Memory.objects.filter(bank=bank).count()
    if have >= n:
        return
    rng = random.Random(7)
    now = timezone.now()
    rows = []
    from banks.providers import get_embedder

    embedder = get_embedder()
    texts = [f"{rng.choice(TOPICS)} note {i}: " + " ".join(f"w{rng.randrange(3000)}" for _ in range(20))
             for i in range(have, n)]
    for i, (text, vector) in enumerate(zip(texts, embedder.embed(texts), strict=True)):
        rows.append(MemoryRow(memory_id=f"fb{have + i}", text=text, fact_type="world", memory_layer=None, tags=[],
                              metadata={}, occurred_at=None, retained_at=now, created_at=now, source="bench",
                              content_hash=content_hash(text), embedding=vector, embedding_model=embedder.name,
                              embedding_dims=embedder.dimensions))
    with transaction.atomic():
        rows_insert(bank.pk, rows, now)


def wait_up(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/live", timeout=5):  # noqa: S310  (loopback)
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not come up")


def drive(url: str, token: str, clients: int, seconds: float) -> tuple[int, list[float]]:
    stop = time.monotonic() + seconds
    latencies: list[float] = []
    lock = threading.Lock()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop:
            body = json.dumps({"bank_id": "front-bench", "query": f"{rng.choice(TOPICS)} w{rng.randrange(3000)}",
                               "max_results": 10}).encode()
            request = urllib.request.Request(url + "/v1/recall", data=body, method="POST", headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            started = time.perf_counter()
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310  (loopback)
                response.read()
            with lock:
                latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies), latencies


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--workers", type=int, default=5)
    args = parser.parse_args()
    call_command("migrate", interactive=False, verbosity=0)
    call_command("createcachetable", verbosity=0)
    populate(args.memories)
    _, token = token_create(name="front-bench", actor="bench",
                            grants=[{"bank": "front-bench", "permissions": ["read", "write"]}])
    env = {**os.environ, "MEMORYHUB_EMBEDDED_DATABASE_URL": settings.MEMORYHUB_DATABASE_URL,
           "SECRET_KEY": settings.SECRET_KEY, "MEMORYHUB_RATE_LIMIT": "1000000/min"}
    run = Path(tempfile.mkdtemp(prefix="front-bench-"))
    sock = run / "web.sock"
    direct_port, front_port = free_port(), free_port()
    processes = [
        subprocess.Popen(gunicorn_command(f"127.0.0.1:{direct_port}", workers=args.workers, threads=1, timeout=120),
                         cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen(gunicorn_command(f"unix:{sock}", workers=args.workers, threads=1, timeout=120),
                         cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "config.front", "--bind", f"127.0.0.1:{front_port}",
                          "--upstream", str(sock)], cwd=REPO, env=env),
    ]
    try:
        for port in (direct_port, front_port):
            wait_up(f"http://127.0.0.1:{port}")
        print(f"recall, {args.memories} memories, {args.clients} clients, {args.seconds:.0f} s, "
              f"{args.workers} sync workers (taken on a loaded shared machine)")
        for name, port in (("direct", direct_port), ("front", front_port), ("direct", direct_port),
                           ("front", front_port)):
            drive(f"http://127.0.0.1:{port}", token, args.clients, 3)  # warm up
            count, latencies = drive(f"http://127.0.0.1:{port}", token, args.clients, args.seconds)
            latencies.sort()
            print(f"{name:7s} {count / args.seconds:7.1f} req/s  p50 {statistics.median(latencies) * 1000:6.1f} ms  "
                  f"p95 {latencies[int(0.95 * (len(latencies) - 1))] * 1000:6.1f} ms")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
