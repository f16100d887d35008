"""Recall latency on a large bank: hybrid recall (semantic + keyword + graph, RRF) p50/p95, per stage.

    .venv/bin/python bench/recall_bench.py --memories 100000 --queries 200
    .venv/bin/python bench/recall_bench.py --memories 20000 --embeddings minilm --synthetic-vectors [--profile]

Uses its own embedded database under var/bench (or DATABASE_URL if set) and the
hashing embedder; memories are bulk-inserted once and reused on later runs.
``--synthetic-vectors`` stores random unit vectors under the embedder's name instead of
embedding every memory: the bank fills in seconds while each question is still embedded by
the real model (the cost a recall pays). Per stage: the p50/p95 each recall's trace reports.
``--profile`` prints where the time of the last configuration went (cProfile, top functions).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
django.setup()

import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from banks.content import content_hash  # noqa: E402
from banks.models import Bank, Memory  # noqa: E402
from banks.providers import get_embedder  # noqa: E402
from banks.recall_fusion import RecallConfig  # noqa: E402
from banks.selectors.recall import RecallFilters, recall_bank  # noqa: E402
from banks.services.memory_rows import rows_contexts_rebuild  # noqa: E402

VOCAB = [f"w{i}" for i in range(5000)]
TOPICS = ["billing", "deploy", "oncall", "pager", "release", "invoice", "customer", "refund", "latency", "backup"]


def populate(bank: Bank, n: int, seed: int = 1, synthetic: bool = False, conversations: bool = False) -> None:
    have = Memory.objects.filter(bank=bank).count()
    if have >= n:
        return
    rng = random.Random(seed + have)
    embedder = get_embedder(bank.embedding_provider or None)
    vectors = np.random.default_rng(seed + have)
    now = timezone.now()
    batch: list[Memory] = []
    started = time.perf_counter()
    for i in range(have, n):
        words = [rng.choice(VOCAB) for _ in range(14)] + [rng.choice(TOPICS), rng.choice(TOPICS)]
        text = " ".join(words) + f" #{i}"
        # --conversations: turns of 20-turn sessions, as a chat client retains them.
        metadata = {"session_id": f"s{i // 20}", "role": ("user", "assistant")[i % 2]} if conversations else {}
        batch.append(Memory(
            bank=bank, memory_id=f"b{i:08d}", text=text, tags=[rng.choice(TOPICS)], retained_at=now,
            created_at=now + timedelta(microseconds=i), metadata=metadata,
            content_hash=content_hash(text), embedding=_unit(vectors, embedder.dimensions) if synthetic
            else embedder.embed([text])[0], embedding_model=embedder.name,
            embedding_dims=embedder.dimensions,
        ))
        if len(batch) == 2000:
            Memory.objects.bulk_create(batch)
            batch.clear()
            done = i + 1
            rate = (done - have) / (time.perf_counter() - started)
            print(f"  inserted {done}/{n} ({rate:.0f}/s)", flush=True)
    if batch:
        Memory.objects.bulk_create(batch)
    if conversations:
        # Each turn's context as every writer gets it (banks.turn_context), through the owner of memory
        # rows; the bench's vectors are left as they are.
        last: int | None = 0
        while last is not None:
            _, _, last = rows_contexts_rebuild(bank=bank, after_pk=last, batch=5000, vectors=False)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")


def _unit(rng: np.random.Generator, dims: int) -> list[float]:
    vector = rng.standard_normal(dims)
    return (vector / np.linalg.norm(vector)).tolist()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embeddings", default="hashing",
                        help="the bank's embedder (minilm: 100k texts take a while to embed once)")
    parser.add_argument("--synthetic-vectors", action="store_true",
                        help="random unit vectors under the embedder's name (questions still embedded for real)")
    parser.add_argument("--profile", action="store_true", help="cProfile the last configuration")
    parser.add_argument("--conversations", action="store_true",
                        help="memories are turns of 20-turn sessions, indexed with their context")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    suffix = "" if args.embeddings == "hashing" else f"-{args.embeddings.replace(':', '-')}"
    suffix += "-synthetic" if args.synthetic_vectors else ""
    suffix += "-turns" if args.conversations else ""
    bank, _ = Bank.objects.get_or_create(bank_id=f"bench-{args.memories}{suffix}",
                                         defaults={"embedding_provider": args.embeddings})
    print(f"bank {bank.bank_id}: populating to {args.memories} memories")
    populate(bank, args.memories, synthetic=args.synthetic_vectors, conversations=args.conversations)
    rng = random.Random(99)
    cases = {
        "hybrid": (RecallFilters(), None),
        "hybrid, no multi-hop": (RecallFilters(), RecallConfig.from_settings({"multi_hop": False})),
        "hybrid+tag filter": (RecallFilters(tags=["billing"]), None),
    }
    profiler = cProfile.Profile() if args.profile else None
    for number, (label, (filters, config)) in enumerate(cases.items(), start=1):
        latencies: list[float] = []
        stages: dict[str, list[float]] = {}
        if profiler is not None and number == len(cases):
            profiler.enable()
        for _ in range(args.queries):
            # Every question is new: none of its work can come from a cache of earlier questions.
            query = " ".join(rng.choice(VOCAB) for _ in range(3)) + " " + rng.choice(TOPICS) + f" q{rng.random()}"
            started = time.perf_counter()
            outcome = recall_bank(bank, query, max_results=10, filters=filters, config=config)
            latencies.append((time.perf_counter() - started) * 1000)
            assert outcome.hits, "recall returned nothing"
            for stage, ms in outcome.trace.strategy_timings_ms.items():
                stages.setdefault(stage, []).append(ms)
        if profiler is not None and number == len(cases):
            profiler.disable()
        print(f"{label:>18}: n={len(latencies)} p50={statistics.median(latencies):.1f} ms "
              f"p95={percentile(latencies, 0.95):.1f} ms max={max(latencies):.1f} ms")
        for stage, values in stages.items():
            print(f"{'':>18}  {stage:<12} p50={statistics.median(values):.1f} ms p95={percentile(values, 0.95):.1f} ms")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
