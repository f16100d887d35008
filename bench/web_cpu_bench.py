"""A web worker's own CPU per /v1 request, in one process, and where it goes.

    .venv/bin/python bench/web_cpu_bench.py                 # 200 recalls and 200 retains a round, 5 rounds
    .venv/bin/python bench/web_cpu_bench.py --requests 300 --rounds 7 --profile

Sends raw WSGI requests (as gunicorn hands them over: token header, JSON body, the front's
X-Forwarded-For) to ``config.wsgi.application``, the whole middleware stack, DRF and the services
included, on a bank of --memories memories under var/web-cpu-bench, with the hashing embedder so the
question's embedding (another owner's cost) stays out of the figure. The CPU is the process's (its
helper threads' reads and the usage buffer's writes included) divided by the requests; a round of
recalls and a round of retains alternate, and the best and median round are printed: on a shared
machine the best round is the steadiest figure. What gunicorn itself spends per request (parsing,
the access log line) is not in it; bench/load_bench.py measures the served whole.

``--profile`` adds one profiled round of each kind (cProfile, the thread's CPU clock), its own time
summed by area: the database client (psycopg and django.db: sending statements, binding parameters,
reading rows), Django's handler and middleware, DRF, JSON, pydantic, and the project's modules. The
profiler costs per call, so areas made of many small calls read larger than they are; the shares
tell where to look, the unprofiled rounds how much there is.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "web-cpu-bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")
# One client: a rate limit sized for people would refuse the bench, not measure it.
os.environ.setdefault("MEMORYHUB_RATE_LIMIT", "100000000/min")

from config.wsgi import application  # noqa: E402  (starts or joins the embedded server, as gunicorn's workers do)

# isort: split

from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

from banks.models import Bank, Memory  # noqa: E402
from banks.services.memory_rows import rows_delete  # noqa: E402
from banks.services.tokens import token_create  # noqa: E402
from bench.load_bench import WORDS, populate, sentence, vacuum  # noqa: E402

BANK = "web-cpu"


def wsgi_post(token: str, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
    data = json.dumps(body).encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1",
        # Behind the front gunicorn listens on a Unix socket: no peer address, the front's header.
        "REMOTE_ADDR": "", "HTTP_X_FORWARDED_FOR": "127.0.0.1", "HTTP_HOST": "127.0.0.1:8000",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(data)),
        "HTTP_AUTHORIZATION": f"Bearer {token}", "HTTP_CONNECTION": "keep-alive",
        "wsgi.input": io.BytesIO(data), "wsgi.input_terminated": True, "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": True,
        "wsgi.run_once": False, "wsgi.version": (1, 0),
    }
    status: list[str] = []

    def start_response(line: str, headers: list[tuple[str, str]], exc_info: Any = None, /) -> Callable[[bytes], object]:
        status.append(line)
        return lambda chunk: None

    body_iter = application(environ, start_response)
    try:
        payload = b"".join(body_iter)
    finally:
        close = getattr(body_iter, "close", None)
        if close is not None:
            close()
    return status[0], payload


def requests(token: str, seed: int) -> dict[str, Callable[[], tuple[str, bytes]]]:
    rng = random.Random(seed)
    sequence = [0]

    def recall() -> tuple[str, bytes]:
        return wsgi_post(token, "/v1/recall", {"query": " ".join(rng.sample(WORDS, 3)), "bank_id": BANK,
                                               "max_results": 10})

    def retain() -> tuple[str, bytes]:
        sequence[0] += 1
        text = (f"{sentence(rng)} Also {' '.join(rng.sample(WORDS, 8))} "
                f"[web-cpu {os.getpid()} {sequence[0]} {rng.random()}]")
        return wsgi_post(token, "/v1/retain", {"content": text, "bank_id": BANK, "tags": ["load"]})

    return {"recall": recall, "retain": retain}


def area(filename: str) -> str:
    path = filename.replace("\\", "/")
    if "/site-packages/" in path:
        package = path.split("/site-packages/", 1)[1]
        if package.startswith(("psycopg", "django/db/", "pgvector/")):
            return "database client (psycopg, django.db)"
        if package.startswith("rest_framework/"):
            return "DRF"
        if package.startswith(("pydantic", )):
            return "pydantic"
        if package.startswith(("django/", "whitenoise/", "django_htmx/", "asgiref/")):
            return "Django (handler, middleware, http, urls)"
        return package.split("/", 1)[0]
    if "/json/" in path:
        return "json"
    if str(REPO) in path:
        relative = path.split(str(REPO) + "/", 1)[1]
        if relative.startswith("memoryhub/postgres/"):
            return "database client (psycopg, django.db)"
        parts = relative.split("/")
        return "/".join(parts[:2]).removesuffix(".py") if len(parts) > 1 else relative
    return "Python's own (builtins, stdlib)"


def profile_round(kind: str, send: Callable[[], tuple[str, bytes]], count: int) -> None:
    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    for _ in range(count):
        send()
    profiler.disable()
    stats = pstats.Stats(profiler)
    by_area: Counter[str] = Counter()
    for (filename, _, _), (_, _, own, _, callers) in stats.stats.items():  # type: ignore[attr-defined]
        if filename != "~" or not callers:
            by_area[area(filename)] += own
            continue
        # A builtin (dict.get, str.join, a C method) counts for the module that called it.
        for (caller_file, _, _), (_, _, caller_own, _) in callers.items():
            by_area[area(caller_file)] += caller_own
    total = sum(by_area.values())
    print(f"\n{kind}, profiled (main thread, {total * 1000 / count:.2f} ms a request with the profiler's cost):")
    for name, own in by_area.most_common(14):
        print(f"  {100 * own / total:5.1f} %  {name}")


def reset(bank: Bank) -> None:
    """Back to the seed: every run recalls over the same rows (a run retains a thousand or so)."""
    with transaction.atomic():
        rows_delete(bank, list(Memory.objects.filter(bank=bank).exclude(memory_id__startswith="seed")
                               .values_list("pk", flat=True)), actor="bench", reason="back to the seed")
    vacuum(bank)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--requests", type=int, default=200, help="requests of each kind a round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="add a profiled round of each kind")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    bank, _ = Bank.objects.get_or_create(bank_id=BANK)
    reset(bank)
    populate(bank, args.memories)
    token = token_create(name=f"web-cpu-bench-{os.getpid()}", actor="web-cpu-bench",
                         grants=[{"bank": BANK, "permissions": ["read", "write"]}])[1]
    send = requests(token, args.seed)
    for _ in range(20):  # warm: URL conf, first statements, caches of the first questions' words
        for kind, request in send.items():
            status, payload = request()
            if not status.startswith("200"):
                raise SystemExit(f"{kind}: {status} {payload[:300]!r}")
    rounds: dict[str, list[float]] = {kind: [] for kind in send}
    for _ in range(args.rounds):
        for kind, request in send.items():
            started = time.process_time()
            for _ in range(args.requests):
                request()
            rounds[kind].append((time.process_time() - started) * 1000 / args.requests)
    print(f"web worker CPU per request, {args.rounds} rounds of {args.requests} (ms, process CPU, hashing embedder):")
    for kind, figures in rounds.items():
        print(f"  {kind}: best {min(figures):.2f}  median {statistics.median(figures):.2f}  "
              f"({' '.join(f'{f:.2f}' for f in figures)})")
    share = 0.7
    best = share * min(rounds["recall"]) + (1 - share) * min(rounds["retain"])
    print(f"  70/30 mix: {best:.2f} ms a request (best rounds)")
    if args.profile:
        for kind, request in send.items():
            profile_round(kind, request, args.requests)
    reset(bank)


if __name__ == "__main__":
    main()
