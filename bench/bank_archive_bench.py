"""Whole-bank archive (.mhba.jsonl) export and restore: memories/second and peak RSS.

    .venv/bin/python bench/bank_archive_bench.py --memories 100000

Builds a bank of N memories (each linked to the next, one in twenty with an
entity, a few observations, mental models and a hold), exports the whole bank,
restores it into an empty bank, and prints the rates and the peak RSS of each
phase. Each phase runs in its own process, so each peak is that phase's own.
Uses its own embedded database under var/bench (hashing embedder).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MEMORYHUB_EMBEDDINGS", "hashing")


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def setup_django() -> None:
    import django
    from django.conf import settings as _settings  # noqa: E402

    from memoryhub.embedded import prepare_local_install  # noqa: E402

    prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
    django.setup()


def build(n: int, bank_id: str) -> None:
    from django.core.management import call_command

    from banks.models import Bank
    from banks.services.banks import bank_delete
    from banks.services.holds import hold_release, hold_set
    from banks.services.mental_models import mental_model_create, mental_model_refresh
    from banks.services.observations import observation_create
    from portability.formats.registry import open_archive
    from portability.services import archive_import

    call_command("migrate", verbosity=0)
    for old in Bank.objects.filter(bank_id__in=[bank_id, f"{bank_id}-restored"]):
        # A previous run left its legal hold on both banks (the restore copies it): release it to start over.
        for hold_id in old.legal_holds.filter(released_at__isnull=True).values_list("hold_id", flat=True):
            hold_release(bank=old, hold_id=hold_id, actor="bench", reason="bench rerun")
        bank_delete(bank=old, actor="bench", confirm=old.bank_id, mode="now")
    bank = Bank.objects.create(bank_id=bank_id)
    with tempfile.TemporaryDirectory(prefix="memoryhub-bench-") as scratch:
        archive = Path(scratch) / "in.ama.jsonl"
        with archive.open("w") as fp:
            fp.write(json.dumps({"_ama_version": 1, "bank_id": bank_id, "provider": "bench", "memory_count": n})
                     + "\n")
            for i in range(n):
                line: dict[str, Any] = {"id": f"m{i:08d}", "text": f"benchmark memory {i} about topic {i % 997} and detail "
                        f"{(i * 7919) % 100003}", "tags": [f"t{i % 50}"], "metadata": {"n": i}}
                if i + 1 < n:
                    line["links"] = [{"target_id": f"m{i + 1:08d}", "link_type": "next"}]
                if i % 20 == 0:
                    line["entities"] = [{"name": f"Entity {i % 400}", "entity_type": "OTHER"}]
                fp.write(json.dumps(line) + "\n")
        _, _, records = open_archive(archive)
        archive_import(bank=bank, records=records, actor="bench", batch_size=1000, extract_entities=False)
    for k in range(20):
        observation_create(bank=bank, text=f"observation {k} about topic {k}", actor="bench",
                           source_ids=[f"m{k:08d}", f"m{k + 1:08d}"])
        model = mental_model_create(bank=bank, model_id=f"model-{k}", title=f"Model {k}", actor="bench",
                                    content="first")
        mental_model_refresh(model=model, actor="bench", content="second")
    hold_set(bank=bank, hold_id="bench-hold", reason="bench", set_by="bench", actor="bench")


def export(bank_id: str, dest: Path) -> None:
    from banks.models import Bank
    from portability.services.bank_archive import bank_archive_export

    started = time.perf_counter()
    counts = bank_archive_export(bank=Bank.objects.get(bank_id=bank_id), dest=dest, actor="bench")
    took = time.perf_counter() - started
    print(f"EXPORT whole bank: {counts['memory']} memories ({sum(counts.values())} rows) in {took:.1f} s = "
          f"{counts['memory'] / took:.0f} memories/s; {dest.stat().st_size / 1e6:.0f} MB; peak RSS {peak_mb():.0f} MB",
          flush=True)


def restore(bank_id: str, source: Path) -> None:
    from banks.models import Bank
    from portability.services.bank_archive import bank_archive_import

    bank = Bank.objects.create(bank_id=f"{bank_id}-restored")
    started = time.perf_counter()
    counts = bank_archive_import(bank=bank, path=source, actor="bench", max_bytes=1 << 40)
    took = time.perf_counter() - started
    print(f"RESTORE whole bank: {counts['memory']} memories ({sum(counts.values())} rows) in {took:.1f} s = "
          f"{counts['memory'] / took:.0f} memories/s; peak RSS {peak_mb():.0f} MB", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--phase", choices=["all", "build", "export", "restore"], default="all")
    parser.add_argument("--archive", default="")
    args = parser.parse_args()
    bank_id = f"mhba-bench-{args.memories}"
    if args.phase == "all":
        with tempfile.TemporaryDirectory(prefix="memoryhub-mhba-") as scratch:
            archive = str(Path(scratch) / "bank.mhba.jsonl")
            for phase in ("build", "export", "restore"):
                subprocess.run([sys.executable, __file__, "--memories", str(args.memories), "--phase", phase,
                                "--archive", archive], check=True)
        return
    setup_django()
    if args.phase == "build":
        started = time.perf_counter()
        build(args.memories, bank_id)
        print(f"built {bank_id} in {time.perf_counter() - started:.1f} s", flush=True)
    elif args.phase == "export":
        export(bank_id, Path(args.archive))
    else:
        restore(bank_id, Path(args.archive))


if __name__ == "__main__":
    main()
