"""Import and export throughput and memory for large AMA archives (hashing embedder).

    .venv/bin/python bench/portability_bench.py --memories 100000
    .venv/bin/python bench/portability_bench.py --memories 1000000

Writes a synthetic archive, imports it into a fresh bank through the same service
the API and the commands use, exports the bank again, and prints memories/second
and the process's peak RSS, sampled as the work goes so flat memory is visible.
Uses its own embedded database under var/bench (or DATABASE_URL).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from banks.models import Bank, Memory  # noqa: E402
from portability.formats.registry import open_archive  # noqa: E402
from portability.services import archive_export, archive_import  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_archive(path: Path, n: int) -> None:
    with path.open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "bench", "exported_at": "2026-11-22T00:00:00+00:00",
                             "provider": "bench", "memory_count": n}) + "\n")
        for i in range(n):
            fp.write(json.dumps({"id": f"m{i:08d}", "text": f"benchmark memory {i} about topic {i % 997} "
                                 f"and detail {(i * 7919) % 100003}", "fact_type": "world",
                                 "tags": [f"t{i % 50}"], "metadata": {"n": i}}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    bank_id = f"import-bench-{args.memories}"
    old = Bank.objects.filter(bank_id=bank_id).first()
    if old is not None:
        from banks.services.banks import bank_delete

        bank_delete(bank=old, actor="bench", confirm=bank_id)
    bank = Bank.objects.create(bank_id=bank_id)
    with tempfile.TemporaryDirectory(prefix="memoryhub-bench-") as scratch:
        archive = Path(scratch) / "in.ama.jsonl"
        started = time.perf_counter()
        write_archive(archive, args.memories)
        print(f"archive: {args.memories} memories, {archive.stat().st_size / 1e6:.1f} MB, "
              f"written in {time.perf_counter() - started:.1f} s", flush=True)
        baseline = rss_mb()
        samples: list[float] = []
        next_report = [0]

        def progress(report) -> None:  # noqa: ANN001
            if report.lines >= next_report[0]:
                samples.append(rss_mb())
                rate = report.lines / (time.perf_counter() - started)
                print(f"  imported {report.lines:>9} lines  {rate:7.0f}/s  rss {samples[-1]:.0f} MB", flush=True)
                next_report[0] += max(args.memories // 10, args.batch)

        started = time.perf_counter()
        _, _, records = open_archive(archive)
        report = archive_import(bank=bank, records=records, actor="bench", batch_size=args.batch, progress=progress)
        took = time.perf_counter() - started
        print(f"IMPORT {report.imported} memories in {took:.1f} s = {report.imported / took:.0f} memories/s; "
              f"RSS before {baseline:.0f} MB, during min {min(samples):.0f} / max {max(samples):.0f} MB, "
              f"peak {peak_mb():.0f} MB", flush=True)
        assert Memory.objects.filter(bank=bank).count() == args.memories
        out = Path(scratch) / "out.ama.jsonl"
        export_samples: list[float] = []
        started = time.perf_counter()
        exported = archive_export(bank=bank, dest=out, actor="bench",
                                  progress=lambda done, total: export_samples.append(rss_mb()))
        took = time.perf_counter() - started
        print(f"EXPORT {exported.exported_count} memories in {took:.1f} s = {exported.exported_count / took:.0f} "
              f"memories/s; {out.stat().st_size / 1e6:.1f} MB; RSS during min {min(export_samples):.0f} / "
              f"max {max(export_samples):.0f} MB, peak {peak_mb():.0f} MB", flush=True)


if __name__ == "__main__":
    main()
