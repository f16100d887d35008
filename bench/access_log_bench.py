"""What the per-memory access log costs a recall: the in-request part and the background flush.

    .venv/bin/python bench/access_log_bench.py --requests 3000

A recall's request only appends one tuple per returned memory to the usage buffer; the rows are written
by the usage writer's flush (one INSERT per flush). This measures ``usage_record_recall`` for a
10-hit answer with the log off (MEMORYHUB_ACCESS_LOG_DAYS=0) and on, alternately, and the flush of 100
such recalls each way. The HTTP figures of ``recall_http_bench.py`` run with and without
MEMORYHUB_ACCESS_LOG_DAYS=0 show the same thing end to end, within their own noise.
Uses its own embedded database under var/bench (or DATABASE_URL if set).
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
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")
os.environ["MEMORYHUB_USAGE_FLUSH_SECONDS"] = "3600"  # nothing flushes while the request side is timed

import django  # noqa: E402
from django.conf import settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(settings)
django.setup()

from django.core.management import call_command  # noqa: E402

from banks.models import Memory  # noqa: E402
from banks.services.banks import bank_create  # noqa: E402
from banks.services.memories import memory_retain  # noqa: E402
from banks.services.usage import _buffer, usage_flush, usage_record_recall  # noqa: E402
from memoryhub.readers import reading_as  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    bank = bank_create(bank_id="access-log-bench", actor="bench", get_existing=True)
    while Memory.objects.filter(bank=bank).count() < 10:
        n = Memory.objects.filter(bank=bank).count()
        memory_retain(bank=bank, text=f"access log bench fact {n} about topic {n * 7}", actor="bench",
                      near_dedup=False)
    ids = list(Memory.objects.filter(bank=bank).values_list("memory_id", flat=True)[:10])
    hits = [type("Hit", (), {"bank_id": bank.bank_id, "memory_id": i, "layer": "fact", "score": 0.5})()
            for i in ids]
    with reading_as("token:bench", "api"):
        for days in (0, 90, 0, 90):
            settings.MEMORYHUB_ACCESS_LOG_DAYS = days
            samples = []
            for _ in range(args.requests):
                started = time.perf_counter()
                usage_record_recall([bank], hits)
                samples.append((time.perf_counter() - started) * 1e6)
            _buffer.take()
            samples.sort()
            print(f"| in the request, access log {'on ' if days else 'off'} | "
                  f"p50 {statistics.median(samples):.1f} µs | p95 {samples[int(len(samples) * 0.95)]:.1f} µs |")
        for days in (0, 90, 0, 90):
            settings.MEMORYHUB_ACCESS_LOG_DAYS = days
            for _ in range(100):
                usage_record_recall([bank], hits)
            started = time.perf_counter()
            usage_flush()
            print(f"| flush of 100 recalls, access log {'on ' if days else 'off'} (background) | "
                  f"{(time.perf_counter() - started) * 1e3:.1f} ms | |")


if __name__ == "__main__":
    main()
