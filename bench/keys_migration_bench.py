"""Migration 0033 (keys that lead with the bank) on a big bank while retains keep coming in.

The database is taken back to the migration before (banks 0032, portability 0001), a bank of N memories is
loaded through the bulk writer (COPY, as imports do) with a mention each, then the migration runs forward
while another thread retains memories into the same bank. It reports how long the migration took, how many
retains were answered meanwhile, and checks that every one is stored and that every constraint is valid.

    .venv/bin/python bench/keys_migration_bench.py --memories 100000

It migrates the local install's database back and forth: run it on a bench install, not on one in use.
``tests/banks/test_bank_keys_migration.py`` runs the same at a small scale.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

BEFORE = [("banks", "0032_bank_scoped_observation_text_index"), ("portability", "0001_pending_links")]
BATCH = 5000
ENTITIES = 50


def _load(bank_pk: int, n: int) -> None:
    """``n`` memories (no vectors: the keys do not care) and one mention each, a batch per transaction."""
    from django.db import transaction
    from django.utils import timezone

    from banks.content import content_hash
    from banks.models import Entity
    from banks.services.bulk_memories import MemoryRow
    from banks.services.memory_rows import mentions_link_pairs, rows_insert

    entities = Entity.objects.bulk_create(
        [Entity(bank_id=bank_pk, entity_id=f"e{i}", name=f"Entity {i}") for i in range(ENTITIES)])
    now = timezone.now()
    for start in range(0, n, BATCH):
        rows = [MemoryRow(memory_id=f"k{i:08d}", text=f"memory number {i} of the keys bench", fact_type="world",
                          memory_layer=None, tags=[f"t{i % 7}"], metadata={}, occurred_at=now, retained_at=now,
                          created_at=now, source=None, content_hash=content_hash(f"memory number {i}"),
                          embedding=None, embedding_model="", embedding_dims=None)
                for i in range(start, min(n, start + BATCH))]
        with transaction.atomic():
            landed = rows_insert(bank_pk, rows, now)
            mentions_link_pairs(bank_pk, [(pk, entities[pk % ENTITIES].pk) for pk in landed.values()])


class Writer(threading.Thread):
    """Retains one memory after another into the bank until stopped; keeps the ids it was answered with."""

    def __init__(self, bank_id: str) -> None:
        super().__init__(daemon=True)
        self.bank_id = bank_id
        self.stop = threading.Event()
        self.stored: list[str] = []
        self.errors: list[str] = []

    def run(self) -> None:
        from django.db import connection

        from banks.models import Bank
        from banks.services.memories import memory_retain

        bank = Bank.objects.get(bank_id=self.bank_id)
        try:
            while not self.stop.is_set():
                n = len(self.stored) + len(self.errors)
                try:
                    outcome = memory_retain(bank=bank, text=f"Alice Smith wrote note {n} while the keys moved.",
                                            actor="bench")
                    if outcome.memory is None:
                        raise RuntimeError(outcome.error or "the retain stored nothing")
                    self.stored.append(outcome.memory.memory_id)
                except Exception as error:  # noqa: BLE001  (counted: a retain must never fail here)
                    self.errors.append(f"{type(error).__name__}: {error}")
        finally:
            connection.close()


def migrate_under_writes(bank_id: str, n: int) -> dict[str, Any]:
    """Take the schema back before 0033, load ``n`` memories, migrate forward under writes; the figures."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from banks.models import Bank, Memory

    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    MigrationExecutor(connection).migrate(BEFORE)
    bank = Bank.objects.create(bank_id=bank_id)
    started = time.perf_counter()
    _load(bank.pk, n)
    loaded = time.perf_counter() - started
    writer = Writer(bank_id)
    writer.start()
    while not writer.stored and not writer.errors and writer.is_alive():  # writes are running before it starts
        time.sleep(0.05)
    before = len(writer.stored)
    started = time.perf_counter()
    MigrationExecutor(connection).migrate(latest)
    migrated = time.perf_counter() - started
    during = len(writer.stored) - before
    time.sleep(0.2)  # and after it
    writer.stop.set()
    writer.join()
    stored = set(Memory.objects.filter(bank=bank, memory_id__in=writer.stored).values_list("memory_id", flat=True))
    with connection.cursor() as cursor:
        cursor.execute("SELECT conrelid::regclass::text || '.' || conname FROM pg_constraint "
                       "WHERE connamespace = 'public'::regnamespace AND NOT convalidated")
        invalid = [r[0] for r in cursor.fetchall()]
        cursor.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'banks_memory_pkey'")
        primary_key = cursor.fetchone()[0]
    return {
        "memories": n, "load_s": round(loaded, 1), "migrate_s": round(migrated, 1),
        "retains_answered": len(writer.stored), "retains_during_migration": during,
        "retain_errors": writer.errors, "lost": sorted(set(writer.stored) - stored),
        "not_validated": invalid, "memory_primary_key": primary_key,
        "total_in_bank": Memory.objects.filter(bank=bank).count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--bank", default="keys-migration-bench")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.conf import settings

    from memoryhub.embedded import prepare_local_install

    prepare_local_install(settings)
    django.setup()
    from django.core.management import call_command

    from banks.models import Bank

    call_command("migrate", verbosity=0)

    Bank.objects.filter(bank_id=args.bank).delete()
    result = migrate_under_writes(args.bank, args.memories)
    for key, value in result.items():
        print(f"{key}: {value}")
    Bank.objects.filter(bank_id=args.bank).delete()


if __name__ == "__main__":
    main()
