"""Near-duplicate scan of a whole bank (the job behind the review page): memories per second, pairs
found, peak RSS; then an incremental scan with nothing new.

    .venv/bin/python bench/duplicates_bench.py --bank bench-100000 [--threshold 0.85]

The bank must exist in the bench database (bench/recall_bench.py or bench/portability_bench.py make one).
"""

from __future__ import annotations

import argparse
import os
import resource
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

from django.utils import timezone  # noqa: E402

from banks.models import Bank, Job, JobState  # noqa: E402
from banks.services.duplicate_scan import KIND, duplicates_scan  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bank", required=True)
    parser.add_argument("--threshold", type=float, default=0.85)
    args = parser.parse_args()
    bank = Bank.objects.get(bank_id=args.bank)
    last = [time.perf_counter()]

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 10:
            last[0] = time.perf_counter()
            print(f"  {done}/{total}", flush=True)

    for label, full in (("full scan", True), ("incremental, nothing new", False)):
        started = time.perf_counter()
        outcome = duplicates_scan(bank=bank, threshold=args.threshold, full=full, progress=progress)
        seconds = time.perf_counter() - started
        # Recorded as the job the worker would have written, so the next run can be incremental.
        Job.objects.create(kind=KIND, bank=bank, state=JobState.SUCCEEDED, created_by="bench",
                           finished_at=timezone.now(), result=outcome.result(),
                           params={"threshold": args.threshold, "full": full})
        rate = outcome.scanned / seconds if seconds else 0.0
        print(f"{label:>26}: {outcome.scanned} memories in {seconds:.1f} s ({rate:.0f}/s), "
              f"{outcome.pairs} pairs at >= {args.threshold}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
