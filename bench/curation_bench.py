"""Operator page times on a big bank: the memory list (first page and a deep page by cursor),
hybrid search, and a memory's detail page, through Django's test client.

    .venv/bin/python bench/curation_bench.py --bank import-bench-1000000 --runs 20

The bank must exist in the bench database (bench/portability_bench.py or bench/recall_bench.py make one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The bench banks are written with the hashing embedder (portability_bench, recall_http_bench); a search
# embedded with another model would find none of their vectors and fall back to scanning the bank.
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from banks.models import Bank, Memory  # noqa: E402


def timed(client: Client, url: str, runs: int) -> tuple[float, float, int]:
    times, queries = [], 0
    for _ in range(runs):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
        queries = len(captured)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], queries


def slowest(client: Client, url: str, top: int = 3) -> None:
    """The page's slowest statements, with any sequential scan or sort PostgreSQL chose for them."""
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    for query in sorted(captured.captured_queries, key=lambda q: -float(q["time"]))[:top]:
        sql = query["sql"]
        line = f"      {float(query['time']) * 1000:6.1f} ms  {sql[:150]}"
        if sql.lstrip().upper().startswith("SELECT"):
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN " + sql)
                plan = [r[0].strip() for r in cursor.fetchall()]
            notes = [p for p in plan if "Seq Scan" in p or p.startswith("-> Sort") or "Sort " in p[:8]]
            if notes:
                line += "\n         plan: " + " | ".join(notes[:3])
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bank", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--explain", action="store_true", help="print each page's slowest statements and plans")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver"]
    bank = Bank.objects.get(bank_id=args.bank)
    user, _ = get_user_model().objects.get_or_create(username="bench-operator", defaults={"is_superuser": True,
                                                                                          "is_staff": True})
    client = Client()
    client.force_login(user)
    deep = Memory.objects.filter(bank=bank).order_by("-retained_at", "-pk")[5000:5001].first()
    from banks.selectors.memories import encode_cursor

    sample = Memory.objects.filter(bank=bank).order_by("pk").first()
    pages = {
        "memory list, first page": f"/banks/{bank.bank_id}/memories/",
        "memory list, 5000 rows deep": f"/banks/{bank.bank_id}/memories/?after={encode_cursor(deep)}",
        "memory list, tag filter": f"/banks/{bank.bank_id}/memories/?tags=t7",
        "hybrid search": f"/banks/{bank.bank_id}/memories/?q=memory+about+topic+42",
        "memory detail": f"/banks/{bank.bank_id}/memories/{sample.memory_id}/",
        "bank overview": f"/banks/{bank.bank_id}/",
        "time travel": f"/banks/{bank.bank_id}/time/?q=memory+about+topic+42",
        "audit log (bank)": f"/audit/?bank={bank.bank_id}",
        "near-duplicate review": f"/banks/{bank.bank_id}/duplicates/",
    }
    from banks.models import AuditEvent

    deep_event = AuditEvent.objects.filter(bank_ref=bank.bank_id).order_by("-created_at", "-id")[5000:5001].first()
    if deep_event is not None:
        pages["audit log, 5000 events deep"] = f"/audit/?bank={bank.bank_id}&before={deep_event.pk}"
    total = Memory.objects.filter(bank=bank).count()
    print(f"bank {bank.bank_id}: {total} memories, {args.runs} runs per page")
    for label, url in pages.items():
        p50, p95, queries = timed(client, url, args.runs)
        print(f"{label:>28}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  {queries} queries")
        if args.explain:
            slowest(client, url)


if __name__ == "__main__":
    main()
