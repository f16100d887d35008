"""Many tenants on one server: each bank's recall beside its neighbours against the same bank without them.

    .venv/bin/python bench/tenants_bench.py                      # scale 1: a 100k neighbour, banks of 300 to 20k
    .venv/bin/python bench/tenants_bench.py --scale 0.2 --load-seconds 30   # a few minutes
    .venv/bin/python bench/tenants_bench.py --no-load            # the tenants table only

Two phases on one embedded server (its own data under var/tenants-bench, started afresh each run):

1. **alone**: the probe banks only (a few hundred, 1,500, 3,000, 6,000, 10,000 and 20,000 memories,
   times ``--scale``), each bank with the words every tenant uses and a few of its own;
2. **beside neighbours**: then one big neighbour (100,000 × scale) whose every memory holds the same
   few frequent words ("scale memory topic detail"), and a Zipf tail of small banks (as
   bench/recall_http_bench.py spreads tenants) holding 20,000 × scale memories between them.

In both phases every probe bank is asked the same questions over HTTP (the real WSGI app, one serving
thread): its own words, the neighbour's frequent words, and its own words filtered on a tag every bank
uses. The table gives p50/p95 per bank and
question kind in each phase, their ratio (goal: beside ≤ 2× alone), and the p50 of the keyword and
semantic arms' own timings (the recall trace). Memories are embedded by the hashing model, as the
storage benches do (the MiniLM load below measures the model); the arms and indexes are the same.

Last, unless ``--no-load``, bench/load_bench.py runs with the default embedder (MiniLM): 30 clients,
70 % recall / 30 % retain, on its own bank of ``--load-memories`` (10,000 × scale) memories.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
VAR = Path(os.environ.get("MEMORYHUB_VAR_DIR", str(REPO / "var" / "tenants-bench")))
os.environ["MEMORYHUB_VAR_DIR"] = str(VAR)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")


def _fresh_data() -> None:
    """Each run starts from an empty server: the alone phase must hold the probe banks only."""
    if "--keep" not in sys.argv and (VAR / "postgres").exists():
        shutil.rmtree(VAR / "postgres")


_fresh_data()

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from banks.content import content_hash  # noqa: E402
from banks.models import Bank  # noqa: E402
from banks.providers import get_embedder  # noqa: E402
from banks.services.bulk_memories import MemoryRow  # noqa: E402
from banks.services.memory_rows import rows_insert  # noqa: E402
from banks.services.text_statistics import bank_lexemes_refresh_all  # noqa: E402
from banks.services.vector_indexes import (  # noqa: E402
    bank_loading,
    bank_vector_index_build,
    bank_vector_index_prepare,
    bank_vector_indexes_grow,
)
from bench.recall_http_bench import (  # noqa: E402
    http_recall,
    percentile,
    serve_http,
    shared_graph_dropped,
    tenant_sizes,
)

COMMON = [f"w{i}" for i in range(3000)]  # the words every tenant uses
TOPICS = ["billing", "deploy", "oncall", "pager", "release", "invoice", "customer", "refund", "latency", "backup"]
# The big neighbour's vocabulary is skewed: these four words are in nearly all its memories.
FREQUENT = ["scale", "memory", "topic", "detail"]
PROBE_SIZES = [300, 1_500, 3_000, 6_000, 10_000, 20_000]


@dataclass
class Spec:
    bank_id: str
    size: int
    kind: str  # probe, neighbour, tail


def plan(scale: float) -> tuple[list[Spec], list[Spec]]:
    sizes = [max(50, int(n * scale)) for n in PROBE_SIZES]
    probes = [Spec(f"probe-{n}", n, "probe") for n in sizes]
    others = [Spec("neighbour", max(1000, int(100_000 * scale)), "neighbour")]
    tail = tenant_sizes(max(200, int(20_000 * scale)), 60)
    others += [Spec(f"tail-{rank:03d}", size, "tail") for rank, size in enumerate(tail)]
    return probes, others


def text_for(spec: Spec, i: int, rng: random.Random) -> str:
    words = [rng.choice(COMMON) for _ in range(12)] + [rng.choice(TOPICS)]
    if spec.kind == "neighbour":
        words += [w for w in FREQUENT if rng.random() < 0.9]
    elif rng.random() < 0.02:
        words.append(rng.choice(FREQUENT))  # probes hold the neighbour's words too, rarely
    words.append(f"{spec.bank_id.replace('-', '')}own{rng.randrange(200)}")  # a few words of the bank's own
    return " ".join(words) + f" #{i}"


def load(spec: Spec, seed: int) -> Bank:
    bank, _ = Bank.objects.get_or_create(bank_id=spec.bank_id)
    rng = random.Random(seed)
    embedder = get_embedder()
    now = timezone.now()
    build = bank_vector_index_prepare(bank, incoming=spec.size)
    with bank_loading(bank):
        for start in range(0, spec.size, 2000):
            texts = [text_for(spec, i, rng) for i in range(start, min(spec.size, start + 2000))]
            rows = [MemoryRow(
                memory_id=f"m{start + k:07d}", text=text, fact_type="world", memory_layer=None,
                tags=[rng.choice(TOPICS)], metadata={}, occurred_at=now, retained_at=now, created_at=now,
                source=None, content_hash=content_hash(text), embedding=vector, embedding_model=embedder.name,
                embedding_dims=embedder.dimensions) for k, (text, vector) in enumerate(zip(texts, embedder.embed(texts),
                                                                                          strict=True))]
            with transaction.atomic():
                rows_insert(bank.pk, rows, now)
    if build or bank.own_vector_index:
        bank_vector_index_build(bank)
    return bank


def load_all(specs: list[Spec], seed: int) -> None:
    """Load the banks; those in the shared graph with the graph dropped and built once after (as the
    state retains would reach, in seconds rather than an HNSW insert per row)."""
    if not specs:
        return
    started = time.perf_counter()
    rebuild = shared_graph_dropped(get_embedder().dimensions)
    for n, spec in enumerate(specs):
        load(spec, seed + n * 7919)
    rebuild()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")
    # What the periodic jobs do after a load: word counts of the big banks, own graphs for the grown ones.
    bank_lexemes_refresh_all()
    bank_vector_indexes_grow()
    print(f"  loaded {len(specs)} banks, {sum(s.size for s in specs)} memories in "
          f"{time.perf_counter() - started:.0f} s", flush=True)


def questions(spec: Spec, kind: str, n: int) -> list[str]:
    rng = random.Random(f"{spec.bank_id}:{kind}")
    own = spec.bank_id.replace("-", "") + "own"
    if kind in ("own words", "tag filter"):
        return [f"{rng.choice(COMMON)} {rng.choice(COMMON)} {rng.choice(TOPICS)} {own}{rng.randrange(200)}"
                for _ in range(n)]
    return [" ".join(FREQUENT) + f" {rng.choice(COMMON)}" for _ in range(n)]


# "tag filter": the bank's own words, filtered on a tag every bank uses (the neighbour's 100,000 memories too).
KINDS = ("own words", "neighbour's words", "tag filter")


def measure(base: str, token: str, probes: list[Spec], n: int) -> dict[tuple[str, str], dict[str, float]]:
    """Per (bank, question kind): p50/p95 of the whole HTTP recall, p50 of the keyword and semantic arms."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for spec in probes:
        for kind in KINDS:
            asked = questions(spec, kind, n)
            extra = {"tags": [TOPICS[0]]} if kind == "tag filter" else {}
            http_recall(base, token, {"bank_id": spec.bank_id, "query": asked[0], "max_results": 10})  # warm
            latencies, keyword, semantic = [], [], []
            for query in asked:
                started = time.perf_counter()
                body = http_recall(base, token, {"bank_id": spec.bank_id, "query": query, "max_results": 10,
                                                 "include_trace": True, **extra})
                latencies.append((time.perf_counter() - started) * 1000)
                timings = (body.get("trace") or {}).get("strategy_timings_ms") or {}
                keyword.append(float(timings.get("keyword", 0.0)))
                semantic.append(float(timings.get("semantic", 0.0)))
            out[(spec.bank_id, kind)] = {"p50": statistics.median(latencies), "p95": percentile(latencies, 0.95),
                                         "keyword": statistics.median(keyword),
                                         "semantic": statistics.median(semantic)}
    return out


def table(probes: list[Spec], alone: dict, beside: dict) -> None:
    print("\n| bank | question | alone p50 / p95 | beside neighbours p50 / p95 | p95 ratio (goal ≤ 2) "
          "| keyword arm p50 alone → beside | semantic arm p50 alone → beside |")
    print("|---|---|---|---|---|---|---|")
    for spec in probes:
        for kind in KINDS:
            a, b = alone[(spec.bank_id, kind)], beside[(spec.bank_id, kind)]
            print(f"| {spec.bank_id} ({spec.size:,}) | {kind} | {a['p50']:.1f} / {a['p95']:.1f} ms "
                  f"| {b['p50']:.1f} / {b['p95']:.1f} ms | {b['p95'] / max(a['p95'], 0.001):.2f} "
                  f"| {a['keyword']:.1f} → {b['keyword']:.1f} ms | {a['semantic']:.1f} → {b['semantic']:.1f} ms |",
                  flush=True)


def run_load(args: argparse.Namespace, memories: int) -> int:
    """bench/load_bench.py with the default embedder, on its own data directory."""
    env = {**os.environ, "MEMORYHUB_VAR_DIR": str(REPO / "var" / "load-bench")}
    env.pop("MEMORYHUB_EMBEDDINGS", None)  # the default embedder (MiniLM)
    command = [sys.executable, str(REPO / "bench" / "load_bench.py"), "--seconds", str(args.load_seconds),
               "--clients", str(args.clients), "--memories", str(memories)]
    print(f"\nload: {' '.join(command[1:])} (default embedder)", flush=True)
    return subprocess.call(command, cwd=REPO, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every bank's size (default 1)")
    parser.add_argument("--queries", type=int, default=40, help="questions per bank and kind (default 40)")
    parser.add_argument("--no-load", action="store_true", help="skip the load figure")
    parser.add_argument("--load-seconds", type=float, default=60.0)
    parser.add_argument("--load-memories", type=int, default=0, help="the load bank's size (default 10,000 × scale)")
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="reuse the data of an earlier run (no fresh server)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    probes, others = plan(args.scale)
    print(f"probe banks: {', '.join(f'{s.bank_id} {s.size}' for s in probes)}; neighbour {others[0].size} "
          f"(skewed: {' '.join(FREQUENT)} in 90 % of its memories); {len(others) - 1} tail banks of "
          f"{sum(s.size for s in others[1:])} memories", flush=True)
    load_all([s for s in probes if not Bank.objects.filter(bank_id=s.bank_id).exists()], seed=1)
    base, token = serve_http()
    # With --keep and the neighbours already there, the probes are no longer alone: that phase is skipped.
    alone = None if Bank.objects.filter(bank_id="neighbour").exists() else measure(base, token, probes, args.queries)
    if alone is None:
        print("  (--keep with the neighbours loaded: no alone phase; the beside figures are printed twice)")
    load_all([s for s in others if not Bank.objects.filter(bank_id=s.bank_id).exists()], seed=100_003)
    beside = measure(base, token, probes, args.queries)
    alone = alone or beside
    table(probes, alone, beside)
    worst = max(beside[k]["p95"] / max(alone[k]["p95"], 0.001) for k in beside)
    print(f"\nworst p95 ratio, beside neighbours / alone: {worst:.2f} (goal ≤ 2)", flush=True)
    if not args.no_load:
        sys.exit(run_load(args, args.load_memories or max(1000, int(10_000 * args.scale))))


if __name__ == "__main__":
    main()
