"""Whatever sequence of writes reaches two banks, through every path that writes memory rows (retain,
import new and overwrite, bulk move/tag/untag/archive, forget, erase, merge, restore, edit), every
bank's counters recomputed from scratch equal the stored ones, and no row hangs across two banks."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from banks.models import Bank, Memory
from banks.services.bulk import bulk_apply
from banks.services.forget import memory_forget
from banks.services.memories import memory_retain
from banks.services.memory_archiving import memories_restore
from banks.services.memory_edit import memory_update
from banks.services.merge import memory_merge
from memoryhub.errors import MemoryHubError
from tests.factories import make_bank, make_import, row_invariant_breaks

pytestmark = pytest.mark.django_db

NAMES = ["Ann", "Ben", "Cat", "Dov", "Eve"]
WORDS = ["harbour", "invoice", "garden", "rocket", "violin", "glacier", "market", "lantern", "orchard", "canyon"]
OPS = ["retain", "import", "overwrite", "move", "tag", "untag", "archive", "forget", "erase", "merge", "restore",
       "edit"]

step = st.tuples(st.sampled_from(OPS), st.integers(0, 1), st.integers(0, 50),
                 st.lists(st.sampled_from(NAMES), max_size=3, unique=True))


class _Walk:
    def __init__(self) -> None:
        self.banks = [make_bank("walk-a"), make_bank("walk-b")]
        self.count = 0

    def text(self, seed: int) -> str:
        self.count += 1
        words = [WORDS[(seed + i * 3) % len(WORDS)] for i in range(4)]
        return f"Note {self.count}: {' '.join(words)} number {seed * 7 + self.count}."

    def pick(self, bank: Bank, seed: int, **where: Any) -> Memory | None:
        rows = list(Memory.objects.filter(bank=bank, **where).order_by("pk"))
        return rows[seed % len(rows)] if rows else None

    def apply(self, op: str, which: int, seed: int, names: list[str]) -> None:
        bank, other = self.banks[which], self.banks[1 - which]
        entities = [{"name": n} for n in names]
        live = {"archived_at__isnull": True, "forgotten_at__isnull": True}
        if op == "retain":
            memory_retain(bank=bank, text=self.text(seed), actor="walk", entities=entities, near_dedup=False)
        elif op == "import":
            make_import(bank, [(f"imp-{self.count}-{seed}", self.text(seed), names)])
        elif op == "overwrite" and (memory := self.pick(bank, seed)) is not None:
            make_import(bank, [(memory.memory_id, self.text(seed), names)], on_conflict="overwrite")
        elif op in {"move", "tag", "untag", "archive"} and (memory := self.pick(bank, seed)) is not None:
            bulk_apply(bank=bank, rows=Memory.objects.filter(pk=memory.pk), action=op, actor="walk",
                       tag=f"t{seed % 3}", target=other if op == "move" else None)
        elif op in {"forget", "erase"} and (memory := self.pick(bank, seed, forgotten_at__isnull=True)) is not None:
            memory_forget(bank=bank, actor="walk", memory_ids=[memory.memory_id], erase=op == "erase", reason="walk")
        elif op == "merge":
            rows = list(Memory.objects.filter(bank=bank, **live).order_by("pk"))
            if len(rows) >= 2:
                first = rows[seed % len(rows)]
                second = rows[(seed + 1) % len(rows)]
                memory_merge(bank=bank, memory_ids=[first.memory_id, second.memory_id], actor="walk")
        elif op == "restore" and (memory := self.pick(bank, seed, archived_at__isnull=False)) is not None:
            memories_restore(bank=bank, memory_ids=[memory.memory_id], actor="walk")
        elif op == "edit" and (memory := self.pick(bank, seed, **live)) is not None:
            memory_update(memory=memory, actor="walk", text=self.text(seed), tags=[f"e{seed % 2}"])


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=12))
def test_counters_recomputed_from_scratch_equal_the_stored_ones(steps):
    with transaction.atomic():
        walk = _Walk()
        for op, which, seed, names in steps:
            try:
                with transaction.atomic():
                    walk.apply(op, which, seed, names)
            except MemoryHubError:
                pass  # a refusal (a clash in the target bank, a hold) writes nothing
        assert row_invariant_breaks() == {}, steps
        transaction.set_rollback(True)
