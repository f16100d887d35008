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
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The figures measure storage, not a model: the hashing embedder unless told otherwise.
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
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


def write_archive(path: Path, n: int, *, embeddings: bool = False) -> None:
    """``embeddings``: every line carries its vector, labelled with the bank's model, as an export with
    embeddings does; the import then stores them instead of embedding. The vectors are the hashing
    embedder's whatever the model (MEMORYHUB_EMBEDDINGS=minilm for the default one): computing a
    million MiniLM vectors here would take hours, and storing does not look at what they mean."""
    from banks.providers import get_embedder
    from banks.providers.embeddings import build_embedder

    model, vectors = get_embedder(), build_embedder("hashing")
    with path.open("w") as fp:
        fp.write(json.dumps({"_ama_version": 1, "bank_id": "bench", "exported_at": "2026-11-22T00:00:00+00:00",
                             "provider": "bench", "memory_count": n}) + "\n")
        for i in range(n):
            line: dict[str, Any] = {"id": f"m{i:08d}", "text": f"benchmark memory {i} about topic {i % 997} "
                    f"and detail {(i * 7919) % 100003}", "fact_type": "world",
                    "tags": [f"t{i % 50}"], "metadata": {"n": i}}
            if embeddings:
                line["embedding"] = vectors.embed([line["text"]])[0]
                line["embedding_model"] = model.name
            fp.write(json.dumps(line) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--with-embeddings", action="store_true",
                        help="the archive carries every memory's vector (as an export with embeddings)")
    parser.add_argument("--embed-sample", type=int, default=20_000,
                        help="texts per embedder for the embedding figures (a tenth of it for minilm)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    bank_id = f"import-bench-{args.memories}"
    old = Bank.objects.filter(bank_id=bank_id).first()
    if old is not None:
        from banks.services.banks import bank_delete

        bank_delete(bank=old, actor="bench", confirm=bank_id, mode="now")
    bank = Bank.objects.create(bank_id=bank_id)
    with tempfile.TemporaryDirectory(prefix="memoryhub-bench-") as scratch:
        archive = Path(scratch) / "in.ama.jsonl"
        started = time.perf_counter()
        write_archive(archive, args.memories, embeddings=args.with_embeddings)
        print(f"archive: {args.memories} memories, {archive.stat().st_size / 1e6:.1f} MB, "
              f"written in {time.perf_counter() - started:.1f} s", flush=True)
        baseline = rss_mb()
        samples: list[float] = []
        next_report = [0]

        last_batch = [0.0]

        def progress(report) -> None:  # noqa: ANN001
            last_batch[0] = time.perf_counter()
            if report.lines >= next_report[0]:
                samples.append(rss_mb())
                rate = report.lines / (time.perf_counter() - started)
                print(f"  imported {report.lines:>9} lines  {rate:7.0f}/s  rss {samples[-1]:.0f} MB", flush=True)
                next_report[0] += max(args.memories // 10, args.batch)

        started = time.perf_counter()
        _, header, records = open_archive(archive)
        report = archive_import(bank=bank, records=records, actor="bench", batch_size=args.batch, progress=progress,
                                expected=header.memory_count)
        took = took_import = time.perf_counter() - started
        print(f"IMPORT {report.imported} memories in {took:.1f} s = {report.imported / took:.0f} memories/s; "
              f"RSS before {baseline:.0f} MB, during min {min(samples):.0f} / max {max(samples):.0f} MB, "
              f"peak {peak_mb():.0f} MB", flush=True)
        loading = last_batch[0] - started
        print(f"  of which: every batch stored (embedding included; keyword-searchable as each commits) "
              f"{loading:.1f} s, then the bank's vector index built {took - loading:.1f} s", flush=True)
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
    postgres_baseline(bank, report.imported / max(took_import, 1e-9),
             exported.exported_count / took)
    embedding_rates(args.embed_sample)


def embedding_rates(sample: int) -> None:
    """Memories/second each local embedder reaches in one process and on the import's worker pool."""
    from django.conf import settings

    from banks.providers.embed_pool import EmbedPool
    from banks.providers.embeddings import build_embedder

    texts = [f"benchmark memory {i} about topic {i % 997} and detail {(i * 7919) % 100003}" for i in range(sample)]
    # The pool at its configured size, and at least two workers so the figure shows how it scales.
    workers = max(2, settings.MEMORYHUB_EMBED_WORKERS)
    for spec in ("hashing", "minilm"):
        embedder = build_embedder(spec)
        n = len(texts) if spec == "hashing" else max(1, len(texts) // 10)
        started = time.perf_counter()
        for i in range(0, n, 500):
            embedder.embed(texts[i:i + 500])
        one = n / (time.perf_counter() - started)
        with EmbedPool(embedder, workers) as pool:
            started = time.perf_counter()
            pending = [pool.submit(texts[i:i + 500]) for i in range(0, n, 500)]
            for part in pending:
                part.get()
            many = n / (time.perf_counter() - started)
        print(f"| embed {spec} ({embedder.name}) | {many:.0f} memories/s on {workers} workers | "
              f"one process {one:.0f}/s | speed-up {many / one:.2f}x |", flush=True)


BASELINE_TABLE = "bench_baseline_memory"


def postgres_baseline(bank: Bank, import_rate: float, export_rate: float) -> None:
    """What PostgreSQL itself does with the same rows: COPY them out, COPY them in, build the indexes."""
    from django.conf import settings
    from django.db import connection

    columns = ("memory_id, text, fact_type, memory_layer, tags, metadata, occurred_at, retained_at, created_at, "
               "source, content_hash, embedding, embedding_model, embedding_dims")
    n = Memory.objects.filter(bank=bank).count()
    with tempfile.TemporaryDirectory(prefix="memoryhub-baseline-") as scratch:
        dump = Path(scratch) / "rows.copy"
        with connection.cursor() as cursor:
            raw = cursor.cursor
            started = time.perf_counter()
            with dump.open("wb") as fp, raw.copy(
                    f"COPY (SELECT {columns} FROM banks_memory WHERE bank_id = {int(bank.pk)} ORDER BY id) "
                    "TO STDOUT") as copy:
                for block in copy:
                    fp.write(block)
            copy_out = time.perf_counter() - started
            cursor.execute(f"DROP TABLE IF EXISTS {BASELINE_TABLE}")
            cursor.execute(f"CREATE TABLE {BASELINE_TABLE} (LIKE banks_memory INCLUDING DEFAULTS "
                           "INCLUDING GENERATED INCLUDING IDENTITY)")
            cursor.execute(f"ALTER TABLE {BASELINE_TABLE} ALTER COLUMN bank_id SET DEFAULT {int(bank.pk)}, "
                           "ALTER COLUMN pii SET DEFAULT false, ALTER COLUMN updated_at SET DEFAULT now()")
            started = time.perf_counter()
            with dump.open("rb") as fp, raw.copy(f"COPY {BASELINE_TABLE} ({columns}) FROM STDIN") as copy:
                while block := fp.read(1 << 20):
                    copy.write(block)
            copy_in = time.perf_counter() - started
            # The same build settings the importer's own index build uses (config.settings).
            cursor.execute("SELECT set_config('maintenance_work_mem', %s, false), "
                           "set_config('max_parallel_maintenance_workers', %s, false)",
                           [settings.MEMORYHUB_INDEX_BUILD_MEMORY, str(settings.MEMORYHUB_INDEX_BUILD_WORKERS)])
            started = time.perf_counter()
            for statement in (
                f"CREATE UNIQUE INDEX ON {BASELINE_TABLE} (bank_id, memory_id)",
                f"CREATE UNIQUE INDEX ON {BASELINE_TABLE} (bank_id, content_hash) "
                "WHERE archived_at IS NULL AND forgotten_at IS NULL",
                f"CREATE INDEX ON {BASELINE_TABLE} USING gin (search_vector)",
                f"CREATE INDEX ON {BASELINE_TABLE} USING gin (tags)",
                f"CREATE INDEX ON {BASELINE_TABLE} (bank_id, retained_at DESC, id DESC)",
                f"CREATE INDEX ON {BASELINE_TABLE} USING hnsw ((embedding::vector(384)) vector_cosine_ops) "
                "WHERE embedding_dims = 384",
            ):
                cursor.execute(statement)
            indexes = time.perf_counter() - started
            cursor.execute(f"DROP TABLE {BASELINE_TABLE}")
    pg_import = n / (copy_in + indexes)
    pg_export = n / copy_out
    print(f"BASELINE PostgreSQL on the same {n} rows: COPY TO {copy_out:.1f} s ({pg_export:.0f} rows/s); "
          f"COPY FROM {copy_in:.1f} s + indexes (HNSW, GIN, btree; {settings.MEMORYHUB_INDEX_BUILD_WORKERS} "
          f"parallel workers, {settings.MEMORYHUB_INDEX_BUILD_MEMORY}) {indexes:.1f} s "
          f"= {pg_import:.0f} rows/s", flush=True)
    print(f"| import | {import_rate:.0f} memories/s | PostgreSQL {pg_import:.0f} rows/s | "
          f"time ratio {pg_import / import_rate:.2f}x (goal <= 1.5x) |")
    print(f"| export | {export_rate:.0f} memories/s | PostgreSQL {pg_export:.0f} rows/s | "
          f"throughput ratio {export_rate / pg_export:.0%} (goal >= 50%) |")
    print(f"| peak RSS | {peak_mb():.0f} MB | | (goal < 300 MB) |", flush=True)


if __name__ == "__main__":
    main()
