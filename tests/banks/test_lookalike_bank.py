"""A generated bank of look-alike facts about different people: no retain refuses one as another's
duplicate, no cluster joins two of them, and true duplicates (reorderings, typos, rephrasings) are still
refused on retain and found by the scan."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from banks.models import Bank
from banks.providers import bank_embedder
from banks.selectors.duplicates import duplicate_clusters
from banks.services.duplicate_scan import duplicates_scan
from banks.services.memories import memory_retain

pytestmark = pytest.mark.django_db

THRESHOLD = 0.85
FIRST = ["Noah", "Liam", "Emma", "Olivia", "Ava", "Lucas", "Mia", "Ethan"]
LAST = ["Smith", "Brown", "Garcia", "Miller"]
MONTHS = ["March", "April"]


def _facts() -> list[tuple[str, str, int, int]]:
    """(name, month, day, amount): every two differ in the person, the date or the amount."""
    rng = random.Random(7)
    people = [f"{f} {last}" for f, last in itertools.product(FIRST, LAST)]  # 32 people, names shared in halves
    facts = [(person, rng.choice(MONTHS), rng.randint(1, 28), 250) for person in people]
    # The same person twice more, another day or another amount.
    facts += [(person, month, day + 1, amount) for person, month, day, amount in facts[:10]]
    facts += [(person, month, day, amount * 2) for person, month, day, amount in facts[:10]]
    return facts


def _text(name: str, month: str, day: int, amount: int) -> str:
    return f"{name} reported a broken laptop to the helpdesk on {month} {day}, 2026 and paid ${amount:,} for the repair."


def _true_duplicates(name: str, month: str, day: int, amount: int) -> list[str]:
    return [
        f"On {month} {day}, 2026 {name} reported a broken laptop to the helpdesk and paid ${amount:,} for the repair.",
        f"{name} reported a brokne laptop to the helpdesk on {month} {day}, 2026 and paid ${amount:,} for the repiar.",
        f"{name} paid ${amount:,} for the repair after he reported a broken laptop to the helpdesk on {month} {day}, 2026.",
    ]


def _cosine(bank: Bank, a: str, b: str) -> float:
    x, y = (np.array(v) for v in bank_embedder(bank).embed([a, b]))
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


def test_lookalikes_are_stored_and_never_clustered_true_duplicates_are_found(make_bank):
    bank = make_bank("lookalikes")
    Bank.objects.filter(pk=bank.pk).update(dedup_threshold=THRESHOLD)
    bank.refresh_from_db()
    facts = _facts()
    texts = [_text(*fact) for fact in facts]
    # The look-alikes are above the bank's threshold: cosine alone would refuse them.
    assert _cosine(bank, texts[0], texts[1]) >= THRESHOLD
    assert _cosine(bank, texts[0], texts[32]) >= THRESHOLD

    stored = {}
    for text in texts:
        outcome = memory_retain(bank=bank, text=text, actor="test", extract_entities=False)
        assert outcome.stored, (text, outcome.duplicate_text, outcome.similarity)  # 0 false refusals
        stored[outcome.memory_id] = text

    # True duplicates are still refused, each naming the memory it repeats.
    originals = {}
    for i in range(0, len(facts), 6):
        for again in _true_duplicates(*facts[i]):
            outcome = memory_retain(bank=bank, text=again, actor="test", extract_entities=False)
            assert not outcome.stored and outcome.duplicate_text == texts[i], (again, outcome.duplicate_text)
            assert outcome.similarity is not None and outcome.similarity >= THRESHOLD
            # Stored anyway (allow_duplicate), for the scan below.
            kept = memory_retain(bank=bank, text=again, actor="test", extract_entities=False, near_dedup=False)
            assert kept.stored
            originals[kept.memory_id] = texts[i]

    outcome = duplicates_scan(bank=bank, threshold=THRESHOLD, full=True)
    assert outcome.pairs > 0
    page = duplicate_clusters(bank=bank, threshold=THRESHOLD, limit=1000)
    false_merges = 0
    found = set()
    for cluster in page.clusters:
        facts_in = {originals.get(m.memory_id, m.text) for m in cluster.memories}
        false_merges += len(facts_in) > 1
        found.update(m.memory_id for m in cluster.memories if m.memory_id in originals)
        for pair in cluster.pairs:
            assert pair.similarity >= THRESHOLD and pair.diff
    assert false_merges == 0
    assert found == set(originals)  # every stored-anyway duplicate sits in its original's cluster
