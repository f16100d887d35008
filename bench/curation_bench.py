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
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

import django  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bank", required=True)
    parser.add_argument("--runs", type=int, default=20)
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
    }
    total = Memory.objects.filter(bank=bank).count()
    print(f"bank {bank.bank_id}: {total} memories, {args.runs} runs per page")
    for label, url in pages.items():
        p50, p95, queries = timed(client, url, args.runs)
        print(f"{label:>28}: p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  {queries} queries")


if __name__ == "__main__":
    main()
