"""Recall over HTTP at scale: p50/p95 per filter, HNSW recall@10 against an exact scan, short answers.

    .venv/bin/python bench/recall_http_bench.py --memories 100000            # one bank
    .venv/bin/python bench/recall_http_bench.py --memories 100000 --banks 1000  # skewed tenants
    .venv/bin/python bench/recall_http_bench.py --bank import-bench-100000   # an imported bank

Queries go through the real WSGI app over loopback HTTP with a bearer token, twice: on the server
as it starts, then with the table and its indexes loaded into shared buffers (pg_prewarm).
Uses its own embedded database under var/bench (or DATABASE_URL if set) and the
hashing embedder; memories are COPY-loaded once through the bulk writer and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import sys
import threading
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# MEMORYHUB_BANK_PARTITIONS=N: a partitioned install of its own (docs/scaling.md "The partitioned install").
_PARTITIONS = int(os.environ.get("MEMORYHUB_BANK_PARTITIONS") or 0)
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / (f"bench-partitions-{_PARTITIONS}" if _PARTITIONS
                                                              else "bench")))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The figures measure storage, not a model: the hashing embedder unless told otherwise.
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from banks.content import content_hash  # noqa: E402
from banks.models import Bank, Memory  # noqa: E402
from banks.providers import get_embedder  # noqa: E402
from banks.selectors.recall import RecallFilters  # noqa: E402
from banks.services.bulk_memories import MemoryRow  # noqa: E402
from banks.services.memory_rows import rows_insert  # noqa: E402
from banks.services.vector_indexes import (  # noqa: E402
    bank_loading,
    bank_vector_index_build,
    bank_vector_index_prepare,
)

VOCAB = [f"w{i}" for i in range(5000)]
TOPICS = ["billing", "deploy", "oncall", "pager", "release", "invoice", "customer", "refund", "latency", "backup"]


def tenant_sizes(total: int, banks: int) -> list[int]:
    """Skewed sizes summing to ``total``: a few huge banks, a long tail of small ones (Zipf, s = 1.1)."""
    weights = [1 / (rank ** 1.1) for rank in range(1, banks + 1)]
    scale = total / sum(weights)
    sizes = [max(1, int(w * scale)) for w in weights]
    sizes[0] += total - sum(sizes)
    return sizes


def populate(bank: Bank, n: int, seed: int = 1) -> None:
    """Bring the bank to ``n`` memories through the bulk writer (COPY + one INSERT per batch), as an import
    of that size would: a bank taking MEMORYHUB_OWN_VECTOR_INDEX_MIN or more moves onto its own HNSW
    index, built after the load; smaller ones go into the shared index row by row."""
    have = Memory.objects.filter(bank=bank).count()
    if have >= n:
        return
    build = bank_vector_index_prepare(bank, incoming=n - have)
    with bank_loading(bank):
        _load(bank, have, n, seed)
    if build or bank.own_vector_index:
        bank_vector_index_build(bank)


def _load(bank: Bank, have: int, n: int, seed: int) -> None:
    rng = random.Random(seed + have)
    embedder = get_embedder()
    now = timezone.now()
    started = time.perf_counter()
    batch: list[MemoryRow] = []

    def flush() -> None:
        with transaction.atomic():
            rows_insert(bank.pk, batch, now)
        batch.clear()

    for i in range(have, n):
        words = [rng.choice(VOCAB) for _ in range(14)] + [rng.choice(TOPICS), rng.choice(TOPICS)]
        text = " ".join(words) + f" #{i}"
        when = now - timedelta(days=rng.randrange(365))
        batch.append(MemoryRow(
            memory_id=f"b{i:08d}", text=text, fact_type="world", memory_layer=None, tags=[rng.choice(TOPICS)],
            metadata={}, occurred_at=when, retained_at=now, created_at=when, source=None,
            content_hash=content_hash(text), embedding=embedder.embed([text])[0], embedding_model=embedder.name,
            embedding_dims=embedder.dimensions))
        if len(batch) == 2000:
            flush()
            rate = (i + 1 - have) / (time.perf_counter() - started)
            if (i + 1) % 20000 == 0:
                print(f"  inserted {i + 1}/{n} ({rate:.0f}/s)", flush=True)
    if batch:
        flush()


def serve_http() -> tuple[str, str]:
    """Serve the real WSGI app on a loopback port in a thread; return its base URL and a read token."""
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from django.core.wsgi import get_wsgi_application

    from banks.services.tokens import token_create

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args) -> None:  # noqa: ANN002
            pass

    # One serving thread, as a gunicorn worker thread: it keeps its database connection (and the model's
    # thread settings) across requests. A thread per request opened a new connection for every recall,
    # which the bench then counted as recall latency.
    server = make_server("127.0.0.1", 0, get_wsgi_application(), server_class=WSGIServer, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _, secret = token_create(name="recall-bench", grants=[{"bank": "*", "permissions": ["read"]}], actor="bench")
    return f"http://127.0.0.1:{server.server_port}", secret


def http_recall(base: str, token: str, body: dict) -> dict:
    request = urllib.request.Request(f"{base}/v1/recall", data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310  (loopback bench server)
        return json.loads(response.read())


def semantic_recall_at_10(bank: Bank, queries: list[str], filters: RecallFilters) -> tuple[float, float]:
    """How much of the exact top 10 (cosine, same filters) recall's semantic arm returns, two ways.

    By id: the share of the exact top-10 ids that the arm's answer also holds. By distance: the share
    of the arm's top 10 at least as near as the exact 10th neighbour (ann-benchmarks' k-nn recall,
    tolerance 1e-6). They differ where many rows tie at the 10th distance, as the bench's texts do
    (they differ by a number or two): any ten of the tied rows are an exact answer, and "by id" counts
    all but one arbitrary choice of them as misses. The arm is called as recall calls it for
    max_results 10 (walking the graph, or answering exactly where it chooses to).
    """
    from banks.selectors.recall import ARMS, _filters_sql, bank_recall_config
    from banks.vectors import distance_sql, vector_literal

    embedder = get_embedder()
    where, params = _filters_sql(bank, filters)
    distance = distance_sql(embedder.dimensions, column="m.embedding")
    limit = bank_recall_config(bank).candidates(10)
    by_id = by_distance = total = 0
    for query in queries:
        approx = ARMS["semantic"](bank, query, filters, limit)[:10]  # (pk, similarity), nearest first
        vector = vector_literal(embedder.embed([query])[0])
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_indexscan = off")
            cursor.execute(f"SELECT m.id, 1 - {distance} FROM banks_memory m WHERE {where} "
                           f"AND m.embedding_dims = %s ORDER BY {distance} + 0 LIMIT 10",
                           [vector, *params, embedder.dimensions, vector])
            exact = cursor.fetchall()
        if not exact:
            continue
        tenth = exact[-1][1]
        by_id += len({r[0] for r in approx} & {r[0] for r in exact})
        by_distance += sum(1 for r in approx if r[1] >= tenth - 1e-6)
        total += len(exact)
    return by_id / max(total, 1), by_distance / max(total, 1)


def prewarm_memories() -> int:
    """Load banks_memory and every index on it into shared buffers (pg_prewarm); returns the pages read."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        # Every partition of a partitioned install; an unpartitioned table has no tree: itself.
        cursor.execute("WITH leaf AS (SELECT relid FROM pg_partition_tree('banks_memory') WHERE isleaf "
                       "UNION ALL SELECT 'banks_memory'::regclass "
                       "WHERE NOT EXISTS (SELECT FROM pg_partition_tree('banks_memory'))) "
                       "SELECT (SELECT sum(pg_prewarm(relid)) FROM leaf) + coalesce((SELECT sum(pg_prewarm(indexrelid)) "
                       "FROM pg_index WHERE indrelid IN (SELECT relid FROM leaf)), 0)")
        return int(cursor.fetchone()[0])


def shared_graph_dropped(dims: int):  # noqa: ANN201  (returns the rebuild)
    """Drop the shared HNSW index of ``dims`` vectors; return what builds it again, as it was defined, with
    the build settings the importer uses for a bank's own index."""
    from banks.services.index_builds import index_build_settings

    name = f"memory_hnsw_{int(dims)}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_indexdef(to_regclass(%s))", [name])
        definition = cursor.fetchone()[0]
        if definition is None:
            raise SystemExit(f"{name} is missing (an earlier --bulk-shared-graph run stopped before building it): "
                             "start again from a fresh MEMORYHUB_VAR_DIR")
        cursor.execute(f"DROP INDEX IF EXISTS {name}")
    # On a partitioned install the parent's definition says ON ONLY (the parent alone): built on every partition.
    definition = definition.replace(" ON ONLY ", " ON ", 1)

    def rebuild() -> None:
        with connection.cursor() as cursor, index_build_settings(cursor):
            cursor.execute(definition)

    return rebuild


def tag_indexes(bank: Bank, *, drop: bool) -> None:
    """Do what the periodic job (banks.index_tags) does after a load: count the big banks' tags and build
    the indexes of the big ones; or, with ``drop``, measure without them."""
    from banks.models import BankTagIndex
    from banks.services.tag_indexes import bank_tag_indexes_drop, bank_tag_indexes_refresh_all
    from banks.services.text_statistics import bank_lexemes_refresh_all

    if drop:
        for pk in set(BankTagIndex.objects.values_list("bank_id", flat=True)):
            bank_tag_indexes_drop(pk)
        print("tag indexes: none (--no-tag-indexes)", flush=True)
        return
    started = time.perf_counter()
    bank_lexemes_refresh_all()  # the banks big enough for statistics are the ones whose tags are counted
    refreshed = bank_tag_indexes_refresh_all()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), coalesce(sum(pg_relation_size(to_regclass('memory_hnsw_tag_' || id))), 0) "
                       "FROM banks_banktagindex WHERE built_at IS NOT NULL")
        built, size = cursor.fetchone()
    print(f"tag indexes: {len(refreshed)} banks refreshed in {time.perf_counter() - started:.1f} s; {built} built "
          f"({float(size) / 1e6:.0f} MB); on {bank.bank_id}: "
          f"{list(BankTagIndex.objects.filter(bank=bank).values_list('tag', 'rows')[:5])}...", flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--banks", type=int, default=1, help="spread the memories over this many banks")
    parser.add_argument("--bank", default="", help="measure an existing bank instead of populating one")
    parser.add_argument("--no-populate", action="store_true",
                        help="with --banks: measure the tenant banks already populated, add nothing")
    parser.add_argument("--bulk-shared-graph", action="store_true",
                        help="with --banks: load the small banks with the shared HNSW graph dropped and build it "
                             "once after (the state that loading them row by row reaches, in minutes, not hours)")
    parser.add_argument("--no-tag-indexes", action="store_true",
                        help="measure without the big tags' own vector indexes (dropping any built)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_inherits WHERE inhparent = 'banks_memory'::regclass")
        print(f"bank tables: {cursor.fetchone()[0] or 'not'} partitioned (MEMORYHUB_VAR_DIR "
              f"{os.environ['MEMORYHUB_VAR_DIR']})", flush=True)
    tenants: list[Bank] = []
    if args.bank:
        bank = Bank.objects.get(bank_id=args.bank)
    elif args.banks > 1:
        sizes = tenant_sizes(args.memories, args.banks)
        print(f"{args.banks} banks, {args.memories} memories: largest {sizes[0]}, median "
              f"{sorted(sizes)[len(sizes) // 2]}, smallest {sizes[-1]}", flush=True)
        rebuild = shared_graph_dropped(get_embedder().dimensions) if args.bulk_shared_graph and not args.no_populate \
            else None
        started = time.perf_counter()
        for rank, size in enumerate(sizes):
            if rank and rank % 1000 == 0:
                print(f"  {rank} banks loaded in {time.perf_counter() - started:.0f} s", flush=True)
            if args.no_populate:
                tenant = Bank.objects.filter(bank_id=f"tenant-{args.memories}-{rank:05d}").first()
                if tenant is None:
                    break
            else:
                tenant, _ = Bank.objects.get_or_create(bank_id=f"tenant-{args.memories}-{rank:05d}")
                populate(tenant, size, seed=rank * 7919)
            tenants.append(tenant)
        if rebuild is not None:
            built = time.perf_counter()
            rebuild()
            print(f"loaded in {built - started:.0f} s; shared graph built in {time.perf_counter() - built:.0f} s",
                  flush=True)
        if args.no_populate:
            print(f"measuring the {len(tenants)} banks populated so far: "
                  f"{Memory.objects.filter(bank__in=tenants).count()} memories", flush=True)
        bank = tenants[0]
    else:
        bank, _ = Bank.objects.get_or_create(bank_id=f"bench-{args.memories}")
        print(f"bank {bank.bank_id}: populating to {args.memories} memories", flush=True)
        populate(bank, args.memories)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE banks_memory")  # once: per bank it made populating 10,000 banks crawl
    tag_indexes(bank, drop=args.no_tag_indexes)
    if not tenants:
        print(f"bank {bank.bank_id}: {Memory.objects.filter(bank=bank).count()} memories", flush=True)
    sizes_by_bank = {t.pk: s for t, s in zip(tenants, tenant_sizes(args.memories, args.banks), strict=False)}
    base, token = serve_http()
    month_ago = (timezone.now() - timedelta(days=30)).isoformat()
    cases: dict[str, tuple[dict[str, Any], RecallFilters]] = {
        "no filter": ({}, RecallFilters()),
        "tag filter": ({"tags": ["t7"] if args.bank else ["billing"]},
                       RecallFilters(tags=["t7"] if args.bank else ["billing"])),
        "time filter": ({"time_range": [month_ago, None]},
                        RecallFilters(time_range=(timezone.now() - timedelta(days=30), None))),
    }
    vocab = [f"topic {i}" for i in range(997)] if args.bank else VOCAB
    # Two passes over the same questions: first on the server as it starts (the pages a question needs
    # come from the operating system), then with the table and its indexes in shared buffers, as on a
    # server that has been answering for a while (or restarted with autoprewarm, memoryhub/embedded.py).
    for state in ("server just started", "warm"):
        if state == "warm":
            print(f"shared buffers: {prewarm_memories()} pages of banks_memory and its indexes loaded", flush=True)
        rng = random.Random(99)
        for label, (extra, filters) in cases.items():
            latencies: list[float] = []
            short = 0
            queries = []
            for _ in range(args.queries):
                query = (" ".join(rng.choice(vocab) for _ in range(2)) + " detail " + str(rng.randrange(100003))
                         if args.bank else " ".join(rng.choice(VOCAB) for _ in range(3)) + " " + rng.choice(TOPICS))
                queries.append(query)
                target = rng.choice(tenants) if tenants else bank  # uniform: most queries hit small banks
                started = time.perf_counter()
                body = http_recall(base, token, {"bank_id": target.bank_id, "query": query, "max_results": 10, **extra})
                latencies.append((time.perf_counter() - started) * 1000)
                # Only banks that surely hold 10 matches count: a 3-memory bank rightly answers 3.
                if (sizes_by_bank.get(target.pk, 10_000) >= 1000) and len(body.get("hits") or []) < 10:
                    short += 1
            quality = ""
            if state == "warm":  # the same answers either way; measured once
                by_id, by_distance = semantic_recall_at_10(bank, queries[:50], filters)  # on the largest bank
                quality = (f" HNSW recall@10 vs exact: by distance {by_distance:.3f}, by id {by_id:.3f} "
                           f"(goal >= 0.95) |")
            print(f"| /v1/recall HTTP, {label}, {state} | p50 {statistics.median(latencies):.1f} ms | "
                  f"p95 {percentile(latencies, 0.95):.1f} ms (goal < 50) |{quality} answers with < 10 hits: "
                  f"{short}/{len(latencies)} |", flush=True)
    print(f"| peak RSS | {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB | |", flush=True)


if __name__ == "__main__":
    main()
