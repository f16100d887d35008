"""Build a bank from a recall-quality corpus: every turn one memory, embedded in batches, entities linked.

Each turn is stored as an Astrocyte client sends a conversation: ``metadata.session_id`` and its role,
occurred at its session's date, created a second after the turn before it (the session's order). The
turns' contexts (banks.turn_context) are computed as retain computes them, with ``context_turns``
preceding turns (0: none).
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from banks.content import content_hash
from banks.models import Bank, Memory
from banks.providers import bank_embedder, get_llm
from banks.recall_eval import Corpus
from banks.services.entities import attach_entities
from banks.services.memory_rows import rows_delete, turn_context_refresh


def build_bank(bank_id: str, embeddings: str, corpus: Corpus, *, batch: int = 64, context_turns: int = 1) -> Bank:
    """The bank (reused when it already holds every turn), embedded with ``embeddings``."""
    bank, _ = Bank.objects.get_or_create(bank_id=bank_id, defaults={"embedding_provider": embeddings})
    bank.config = {**(bank.config or {}), "recall": {**((bank.config or {}).get("recall") or {}),
                                                     "context_turns": context_turns}}
    bank.save(update_fields=["config"])
    if Memory.objects.filter(bank=bank).count() >= len(corpus.turns):
        return bank
    with transaction.atomic():
        rows_delete(bank, list(Memory.objects.filter(bank=bank).values_list("pk", flat=True)), actor="bench",
                    reason="the corpus is loaded again")
    embedder = bank_embedder(bank)
    llm = get_llm()
    now = timezone.now()
    turns = list(corpus.turns.values())
    seen_hashes: set[str] = set()
    for start in range(0, len(turns), batch):
        chunk = turns[start:start + batch]
        vectors = embedder.embed([t.text for t in chunk])
        rows = []
        for turn, vector in zip(chunk, vectors, strict=True):
            # Identical texts in two sessions are one memory per bank (as retain would store them);
            # the hash is salted with the turn so every labelled turn keeps its own row.
            digest = content_hash(f"{turn.key}\n{turn.text}")
            if digest in seen_hashes:
                continue
            seen_hashes.add(digest)
            position = int(turn.key.rsplit(":", 1)[1])
            rows.append(Memory(bank=bank, memory_id=turn.key, text=turn.text, fact_type="experience",
                               metadata={"session_id": turn.session_id, "role": turn.role},
                               occurred_at=turn.occurred_at,
                               created_at=turn.occurred_at + timedelta(seconds=position), retained_at=now,
                               content_hash=digest, embedding=vector, embedding_model=embedder.name,
                               embedding_dims=embedder.dimensions))
        with transaction.atomic():
            created = Memory.objects.bulk_create(rows)
            for memory in created:
                entities = [{"name": e.name, "entity_type": e.entity_type} for e in llm.extract_entities(memory.text)]
                if entities:
                    attach_entities(memory, entities)
            # As the writers do: the turns' contexts, their neighbours', and (after the commit) their vectors.
            turn_context_refresh(bank=bank, pks=[m.pk for m in created])
    return bank
