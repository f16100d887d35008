"""A bank's own HNSW index after its memories turned over many times: its size, and what its graph walk
costs, against the same index rebuilt.

    .venv/bin/python bench/load_bench.py --memories 3000 --seconds 10   # once: makes the bank
    .venv/bin/python bench/index_growth_bench.py                        # 6 rounds of churn
    .venv/bin/python bench/index_growth_bench.py --rounds 12 --bank load-3000

Works on a copy of bench/load_bench.py's data (var/load-bench, copied to var/index-growth-bench while
that server is stopped), whose bank sits on its own index. Each round rewrites every vector of the
bank twice (through banks.services.memory_rows.rows_reembed, as the re-embed job does), tilted by an
element-wise factor and back (a new direction each time, so the index takes a new entry: scaling a whole
vector would not, as the cosine index stores it normalised and adds a row to an equal entry), with a
VACUUM after each: the churn of as many retains and deletes, without the model.
Before, after the churn and after ``REINDEX INDEX CONCURRENTLY`` it prints the index's size and, over
60 questions (stored vectors, nudged), the graph walk's time and buffers (EXPLAIN ANALYZE, the third of
three passes) at recall's breadth, and recall@10 against an exact scan.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SOURCE = REPO / "var" / "load-bench"
COPY = REPO / "var" / "index-growth-bench"
os.environ["MEMORYHUB_VAR_DIR"] = str(COPY)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def copy_data() -> None:
    if not (SOURCE / "postgres").is_dir():
        sys.exit(f"no {SOURCE}: run bench/load_bench.py --memories 3000 --seconds 10 once first")
    if any(SOURCE.glob("postgres/**/postmaster.pid")):
        sys.exit(f"{SOURCE} is in use (its server is running): stop bench/load_bench.py first")
    shutil.rmtree(COPY, ignore_errors=True)
    # cp -a keeps the files' owner: the embedded server runs as its own user and refuses a root-owned copy.
    subprocess.run(["cp", "-a", str(SOURCE), str(COPY)], check=True)
    shutil.rmtree(COPY / "run", ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--bank", default="load-3000")
    parser.add_argument("--questions", type=int, default=60)
    args = parser.parse_args()
    copy_data()

    import django
    from django.conf import settings

    from memoryhub.embedded import prepare_local_install

    prepare_local_install(settings)
    django.setup()
    from django.db import connection, transaction

    from banks.models import Bank, Memory
    from banks.services.memory_rows import rows_reembed
    from banks.vectors import bank_index_name, distance_sql, vector_literal, vector_scope, walk_breadth

    bank = Bank.objects.get(bank_id=args.bank)
    if not bank.own_vector_index:
        sys.exit(f"bank {args.bank} is on the shared index; give it {settings.MEMORYHUB_OWN_VECTOR_INDEX_ROWS} memories")
    index = bank_index_name(bank.pk)
    # The semantic arm's statement on a bank's own graph: its scope and distance as recall writes them.
    query = (f"SELECT id FROM banks_memory WHERE {vector_scope(bank.pk, own=True)} AND embedding_dims = 384 "
             f"AND archived_at IS NULL AND forgotten_at IS NULL ORDER BY {distance_sql(384)} LIMIT 50")
    rows = list(Memory.objects.filter(bank=bank, embedding_dims=384).order_by("pk")
                .values_list("pk", "embedding", "embedding_model"))
    pks, model = [pk for pk, _, _ in rows], rows[0][2]
    stored = np.array([vector for _, vector, _ in rows], dtype=np.float32)
    rng = np.random.default_rng(7)
    picked = stored[rng.choice(len(stored), size=min(args.questions, len(stored)), replace=False)]
    questions = [vector_literal(v.tolist()) for v in picked + rng.normal(0, 0.02, picked.shape).astype(np.float32)]
    cursor = connection.cursor()
    cursor.execute("SET enable_indexscan = off")
    truth = []
    for question in questions:
        cursor.execute(query, [question])
        truth.append({row[0] for row in cursor.fetchall()[:10]})
    cursor.execute("RESET enable_indexscan")
    live = Memory.objects.filter(bank=bank, forgotten_at__isnull=True).count()
    breadth = walk_breadth(50, own=True, graph_rows=live)
    cursor.execute("SELECT set_config('hnsw.ef_search', %s, false), "
                   "set_config('hnsw.iterative_scan', 'relaxed_order', false)", [str(breadth)])

    def measure(label: str) -> None:
        cursor.execute("SELECT pg_relation_size(%s::regclass)", [index])
        size = cursor.fetchone()[0]
        times: list[float] = []
        buffers: list[int] = []
        for passes in range(3):
            for question in questions:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, [question])
                plan: Any = cursor.fetchone()[0]
                plan = json.loads(plan) if isinstance(plan, str) else plan
                if passes == 2:
                    times.append(plan[0]["Execution Time"])
                    buffers.append(plan[0]["Plan"]["Shared Hit Blocks"] + plan[0]["Plan"]["Shared Read Blocks"])
        found = []
        for question, nearest in zip(questions, truth, strict=True):
            cursor.execute(query, [question])
            found.append(len({row[0] for row in cursor.fetchall()[:10]} & nearest) / 10)
        print(f"{label}: index {size / 1e6:.1f} MB; walk p50 {statistics.median(times):.2f} ms, "
              f"p95 {statistics.quantiles(times, n=20)[18]:.2f} ms; buffers p50 {statistics.median(buffers):.0f}; "
              f"recall@10 {statistics.mean(found):.3f}", flush=True)

    print(f"bank {args.bank}: {live} memories, walk breadth (hnsw.ef_search) {breadth}")
    measure("as copied")
    # Through the rows' owner, as the re-embed job writes a bank's new vectors.
    tilted = stored * np.where(np.arange(384) % 2, 1.01, 0.99).astype(np.float32)
    there, back = ([vector_literal(v.tolist()) for v in vectors] for vectors in (tilted, stored))
    for _ in range(args.rounds):
        for literals in (there, back):
            with transaction.atomic():
                rows_reembed(bank.pk, pks, literals, model, 384)
            cursor.execute("VACUUM banks_memory")
    measure(f"after {args.rounds} rounds ({2 * args.rounds * live} vectors rewritten, vacuumed)")
    cursor.execute(f"REINDEX INDEX CONCURRENTLY {index}")
    measure("rebuilt")


if __name__ == "__main__":
    main()
