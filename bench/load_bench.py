"""Load on a server started as `make run` starts it: N clients, recall/retain mix, on a 10k bank.

    .venv/bin/python bench/load_bench.py                  # 30 clients, 70/30, 3 minutes
    .venv/bin/python bench/load_bench.py --seconds 60 --clients 30

Starts `manage.py serve` (gunicorn, Celery worker and beat, MCP, the embedded
PostgreSQL) on its own data under var/load-bench, with the default embedder, and a
bank of --memories memories (inserted once, reused by later runs). Each client owns a
token and a keep-alive connection and sends requests back to back: recall with
probability --recall-share, retain otherwise. A warm-up (not counted) lets every web
worker load the embedding model. Prints throughput, p50/p95/p99 per operation,
errors by status and the CPU a request cost in each part of the server (from /proc),
then checks in the database that every acknowledged retain is stored exactly once,
and removes them (each run starts from the same bank). Environment variables of
`make run` (MEMORYHUB_WEB_WORKERS, ...) pass through to the server.

Every question is new by default (three of ~150 words: no two clients ask alike).
``--repeat-share 0.3`` makes that share of recalls one of ``--repeat-pool`` (200)
common questions, drawn with Zipf weights, as users ask the same things again (each
web worker keeps its own cache of question vectors, banks.selectors.recall_query);
report figures both ways.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "load-bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
django.setup()
# One log line per request would drown the figures.
logging.getLogger("httpx").setLevel(logging.WARNING)

import httpx  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import Count  # noqa: E402
from django.utils import timezone  # noqa: E402

from banks.content import content_hash  # noqa: E402
from banks.models import Bank, Memory  # noqa: E402
from banks.providers import get_embedder  # noqa: E402
from banks.services.access_log import access_log_drop_bank  # noqa: E402
from banks.services.memory_rows import rows_delete  # noqa: E402
from banks.services.tokens import token_create  # noqa: E402
from banks.services.vector_indexes import bank_vector_indexes_grow  # noqa: E402
from bench.load_client import (  # noqa: E402
    Connection,
    HttpxConnection,
    cpu_report,
    cpu_snapshot,
    percentile,
)

WORDS = (
    "account address agent alert answer api archive backup balance billing budget build cache calendar call "
    "change chat check client cluster code config contract cost customer dashboard data database deadline "
    "deploy design device discount dispute document domain email error escalation event export feature fee "
    "file firewall form invoice issue job key language latency launch license limit log login meeting memory "
    "message metric migration mobile model monitor network note notification office oncall order outage "
    "owner pager partner password payment plan policy preference price printer priority product project "
    "query queue quota refund region release report request review risk role schedule search server service "
    "session setting shipping signup storage subscription support survey team ticket timezone token training "
    "travel trial upgrade user vendor version wallet warehouse webhook weekly workflow"
).split()
VERBS = "prefers asked reported moved approved rejected scheduled renewed cancelled upgraded mentioned needs".split()
NAMES = "Alice Bruno Chen Dana Emeka Farah Goran Hana Ivan Jade Kofi Lena Mateo Nia Omar Priya".split()


def sentence(rng: random.Random) -> str:
    picked = rng.sample(WORDS, 6)
    return (f"{rng.choice(NAMES)} {rng.choice(VERBS)} the {picked[0]} {picked[1]} for the {picked[2]} "
            f"{picked[3]}, with {picked[4]} and {picked[5]} noted on {rng.randint(1, 28)} "
            f"{rng.choice(['March', 'June', 'September', 'December'])}.")


def populate(bank: Bank, n: int) -> None:
    have = Memory.objects.filter(bank=bank).count()
    if have >= n:
        return
    rng = random.Random(7 + have)
    embedder = get_embedder()
    print(f"  embedding {n - have} memories with {embedder.name} (once; later runs reuse them)", flush=True)
    now = timezone.now()
    started = time.perf_counter()
    for start in range(have, n, 500):
        texts = [f"{sentence(rng)} (note {i})" for i in range(start, min(n, start + 500))]
        vectors = embedder.embed(texts)
        Memory.objects.bulk_create([
            Memory(bank=bank, memory_id=f"seed{start + k:07d}", text=text, tags=[rng.choice(WORDS)],
                   retained_at=now, created_at=now, content_hash=content_hash(text), embedding=vector,
                   embedding_model=embedder.name, embedding_dims=embedder.dimensions)
            for k, (text, vector) in enumerate(zip(texts, vectors, strict=True))
        ])
        done = min(n, start + 500)
        print(f"  {done}/{n} ({(done - have) / (time.perf_counter() - started):.0f}/s)", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")


def vacuum(bank: Bank) -> None:
    """Clear the rows a run deleted out of the tables and their indexes: left to autovacuum, a run's
    thousands of dead graph entries made the next run's vector searches three times slower (1.1 against
    3.3 ms at 10k), so runs were not comparable.

    After a dozen runs (50,000 inserts and deletes) the 3,000-memory bank's graph had grown from 6 to
    26 MB and its full-text index from 0.3 to 3.4 MB (bench/index_growth_bench.py: a graph's walk does not
    pay for such growth). The memory table's indexes are built again, and the bank's access log (every
    recall's hits) is emptied, so each run starts from the bank as it was populated."""
    access_log_drop_bank(bank.pk)
    with connection.cursor() as cursor:
        for table in ("banks_memory", "banks_memoryentity", "banks_auditevent", "banks_entity", "banks_memoryaccess"):
            cursor.execute(f"VACUUM ANALYZE {table}")
        cursor.execute("REINDEX TABLE banks_memory")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    addr = f"127.0.0.1:{free_port()}"
    env = {**os.environ, "MEMORYHUB_ADDR": addr, "MEMORYHUB_MCP_ADDR": f"127.0.0.1:{free_port()}"}
    env.pop("MEMORYHUB_DEV", None)
    with log.open("wb") as out:
        server = subprocess.Popen([sys.executable, "manage.py", "serve"], cwd=REPO, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"serve exited early; see {log}")
        try:
            if httpx.get(f"http://{addr}/health", timeout=5).status_code == 200:
                return server, addr
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"serve did not answer within 180 s; see {log}")


def stop_server(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@dataclass
class Results:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    acknowledged: list[tuple[str, str]] = field(default_factory=list)  # (memory_id, text) of stored writes
    merged: list[str] = field(default_factory=list)  # memory ids answered for writes judged near-duplicates
    counting: bool = False
    per_client: Counter[int] = field(default_factory=Counter)  # counted requests per client
    cpu_before: dict[str, float] = field(default_factory=dict)
    cpu_after: dict[str, float] = field(default_factory=dict)


def common_questions(seed: int, count: int) -> tuple[list[str], list[float]]:
    """The questions users ask again and again (``--repeat-share``), the same in every client, with
    Zipf weights (the n-th is asked 1/n as often as the first): a few are asked very often."""
    rng = random.Random(f"common:{seed}")
    return [" ".join(rng.sample(WORDS, 3)) for _ in range(count)], [1 / n for n in range(1, count + 1)]


async def client(number: int, base: str, token: str, bank_id: str, share: float, results: Results,
                 stop_at: float, seed: int, run: str, use_httpx: bool = False, repeat_share: float = 0.0,
                 common: tuple[list[str], list[float]] | None = None) -> None:
    # Seeded per run as well as per client: a later run on the same (reused) bank must not send the
    # sentences of an earlier one, which the server would rightly answer as near-duplicates.
    rng = random.Random(f"{seed}:{run}:{number}")
    host, _, port = base.removeprefix("http://").partition(":")
    http: Connection | HttpxConnection = HttpxConnection(base, token) if use_httpx else Connection(host, int(port), token)
    sequence = 0
    try:
        while time.monotonic() < stop_at:
            sequence += 1
            if rng.random() < share:
                op = "recall"
                # Three of ~150 words in order: distinct questions (about 3.3 million), unless a repeated one.
                question = (rng.choices(common[0], weights=common[1])[0] if common and rng.random() < repeat_share
                            else " ".join(rng.sample(WORDS, 3)))
                body = {"query": question, "bank_id": bank_id, "max_results": 10}
            else:
                op = "retain"
                # Enough random words that no two writes are near-duplicates (they would be merged, by design).
                text = (f"{sentence(rng)} Also {' '.join(rng.sample(WORDS, 8))} "
                        f"[client {number} request {sequence} {uuid.uuid4().hex[:12]}]")
                body = {"content": text, "bank_id": bank_id, "tags": ["load"]}
            started = time.perf_counter()
            payload = b""
            try:
                code, payload = await asyncio.wait_for(http.post(f"/v1/{op}", body), 60)
                status = str(code)
            except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
                status = exc.__class__.__name__
                await http.close()
            elapsed = (time.perf_counter() - started) * 1000
            ok = status in {"200", "201"}
            if ok and op == "retain":
                # Warm-up retains count here too: every acknowledged write must be kept.
                answer = json.loads(payload)
                if answer.get("stored"):
                    results.acknowledged.append((answer["memory_id"], text))
                else:
                    results.merged.append(answer["memory_id"])
            if not results.counting:
                continue
            results.statuses[op][status] += 1
            results.per_client[number] += 1
            if ok:
                results.latencies[op].append(elapsed)
    finally:
        await http.close()
        if isinstance(http, HttpxConnection):
            await http.http.aclose()


async def run_load(base: str, tokens: list[str], bank_id: str, args: argparse.Namespace) -> tuple[Results, float]:
    results = Results()
    begin = time.monotonic()
    stop_at = begin + args.warmup + args.seconds
    run = uuid.uuid4().hex[:8]
    common = common_questions(args.seed, args.repeat_pool)
    tasks = [asyncio.create_task(client(i, base, tokens[i], bank_id, args.recall_share, results, stop_at, args.seed,
                                        run, args.httpx, args.repeat_share, common))
             for i in range(args.clients)]
    await asyncio.sleep(args.warmup)
    results.counting = True
    counted_from = time.monotonic()
    results.cpu_before = cpu_snapshot(args.server_pid, args.pgdata)
    await asyncio.gather(*tasks)
    results.cpu_after = cpu_snapshot(args.server_pid, args.pgdata)
    return results, time.monotonic() - counted_from


def report(results: Results, elapsed: float) -> None:
    total = sum(sum(c.values()) for c in results.statuses.values())
    print(f"\n{total} requests in {elapsed:.0f} s: {total / elapsed:.1f} req/s")
    for op in ("recall", "retain"):
        lat = results.latencies.get(op, [])
        done = sum(results.statuses[op].values())
        if not lat:
            print(f"  {op}: {done} requests, none succeeded")
            continue
        print(f"  {op:>6}: {done} requests ({done / elapsed:.1f}/s)  p50 {statistics.median(lat):.0f} ms  "
              f"p95 {percentile(lat, 0.95):.0f} ms  p99 {percentile(lat, 0.99):.0f} ms  max {max(lat):.0f} ms")
    if results.per_client:
        # Clients pinned to a busier web worker wait longer: an uneven spread here is latency spread.
        counts = sorted(results.per_client.values())
        print(f"  requests per client: min {counts[0]}  median {statistics.median(counts):.0f}  max {counts[-1]}"
              f"  ({' '.join(map(str, counts))})")
    errors = {f"{op} {status}": n for op, counter in results.statuses.items() for status, n in counter.items()
              if status not in {"200", "201"}}
    print("  errors by status: " + (", ".join(f"{k}: {v}" for k, v in sorted(errors.items())) or "none"))
    cpu_report(results.cpu_before, results.cpu_after, total)


def verify(bank: Bank, acknowledged: list[tuple[str, str]], merged: list[str]) -> bool:
    """Every acknowledged retain is in the bank exactly once, under the id the server answered; a write
    answered as a near-duplicate points at a memory that exists."""
    texts = [text for _, text in acknowledged]
    found: dict[str, int] = {}
    ids: dict[str, set[str]] = defaultdict(set)
    for start in range(0, len(texts), 1000):
        chunk = texts[start:start + 1000]
        rows = Memory.objects.filter(bank=bank, text__in=chunk).values("text").annotate(n=Count("id"))
        found.update({row["text"]: row["n"] for row in rows})
        for memory_id, text in Memory.objects.filter(bank=bank, text__in=chunk).values_list("memory_id", "text"):
            ids[text].add(memory_id)
    missing = [t for t in texts if t not in found]
    duplicated = [t for t in texts if found.get(t, 0) > 1]
    wrong_id = [mid for mid, t in acknowledged if t in found and mid not in ids[t]]
    existing = set(Memory.objects.filter(bank=bank, memory_id__in=set(merged)).values_list("memory_id", flat=True))
    dangling = [mid for mid in merged if mid not in existing]
    print(f"\nacknowledged retains: {len(acknowledged)} stored; missing: {len(missing)}; stored more than once: "
          f"{len(duplicated)}; under another id: {len(wrong_id)}")
    print(f"answered as near-duplicates of an existing memory: {len(merged)}; pointing nowhere: {len(dangling)}")
    return not (missing or duplicated or wrong_id or dangling)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=180.0, help="measured duration (default 180)")
    parser.add_argument("--warmup", type=float, default=15.0, help="seconds of load before measuring")
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--recall-share", type=float, default=0.7)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat-share", type=float, default=0.0,
                        help="share of recalls asking one of --repeat-pool common questions (default 0: every "
                             "question new, as the issue's workload)")
    parser.add_argument("--repeat-pool", type=int, default=200)
    parser.add_argument("--httpx", action="store_true",
                        help="send the load with httpx (a heavier client, as earlier figures were measured)")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    bank, _ = Bank.objects.get_or_create(bank_id=f"load-{args.memories}")
    # Left over from a run that stopped before its clean-up: the bank is its seed and nothing else.
    with transaction.atomic():
        rows_delete(bank, list(Memory.objects.filter(bank=bank).exclude(memory_id__startswith="seed")
                               .values_list("pk", flat=True)), actor="load-bench", reason="left over from a run")
    vacuum(bank)
    print(f"bank {bank.bank_id}: populating to {args.memories} memories", flush=True)
    populate(bank, args.memories)
    # A served bank of this size is on its own graph within MEMORYHUB_OWN_VECTOR_INDEX_SECONDS (the periodic
    # pass), but a run's server stops long before that pass: without this, a new data directory measured
    # the bank on the shared graph and an older one on its own, and the two did not compare. The move
    # rewrites every row of the bank: vacuumed after it, as before any other run.
    if bank_vector_indexes_grow():
        vacuum(bank)
    bank.refresh_from_db(fields=["own_vector_index"])
    print(f"  its vectors: {'on its own graph' if bank.own_vector_index else 'on the shared graph'}", flush=True)
    tokens = [token_create(name=f"load-bench-{i}", actor="load-bench",
                           grants=[{"bank": bank.bank_id, "permissions": ["read", "write"]}])[1]
              for i in range(args.clients)]
    connection.close()

    log = Path(os.environ["MEMORYHUB_VAR_DIR"]) / "serve.log"
    server, addr = start_server(log)
    args.server_pid = server.pid
    args.pgdata = str(Path(os.environ["MEMORYHUB_VAR_DIR"]) / "postgres")
    load_before = os.getloadavg()
    try:
        print(f"server up at http://{addr}/ (log: {log}); load average before: "
              f"{' '.join(f'{x:.2f}' for x in load_before)}", flush=True)
        # The interpreter's build moves the web workers' CPU by a tenth (docs/operations.md, "Production").
        print(f"Python {platform.python_version()}, {os.path.realpath(sys.executable)}", flush=True)
        print(f"{args.clients} clients, {args.recall_share:.0%} recall "
              f"({args.repeat_share:.0%} of them one of {args.repeat_pool} common questions), "
              f"{args.warmup:.0f} s warm-up, {args.seconds:.0f} s measured", flush=True)
        results, elapsed = asyncio.run(run_load(f"http://{addr}", tokens, bank.bank_id, args))
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        report(results, elapsed)
    finally:
        stop_server(server)
    ok = verify(bank, results.acknowledged, results.merged)
    # Every run starts from the same bank: what this run wrote goes once it has been checked.
    with transaction.atomic():
        removed = rows_delete(bank, list(Memory.objects.filter(bank=bank, memory_id__in=[m for m, _ in results.acknowledged])
                                         .values_list("pk", flat=True)), actor="load-bench",
                             reason="what the run wrote")
    vacuum(bank)
    print(f"removed the {removed} memories this run wrote (and their links); the bank is back to its seed")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
