"""Vectors filled in after a big import stored its memories without them.

When embedding is slower than storing (a local model, a remote API), a big import writes each
batch at once, vectors left out: keyword search and the curation list see every memory within
seconds of its batch, and the recall trace counts those still waiting (``embeddings_pending``).
Then this fills the vectors in, in id order, on the embedding workers one batch ahead, while the
bank's own HNSW index is not there yet (so an update costs no graph insert); the index is built
after. A text edited meanwhile got its own vector from the edit and is left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction

from banks.models import Bank, Memory
from banks.providers import Embedder, bank_embedder
from banks.providers.embed_pool import EmbedPool
from banks.providers.embeddings import HashingEmbedder
from banks.services.memory_rows import rows_vectors_fill
from banks.turn_context import embedding_text

BATCH = 1000


def defer_vectors(embedder: Embedder) -> bool:
    """Whether a big import into a bank using ``embedder`` stores first and embeds after."""
    mode = settings.MEMORYHUB_IMPORT_DEFER_VECTORS
    if mode == "always":
        return True
    return mode == "auto" and not isinstance(embedder, HashingEmbedder)


def _pending(bank: Bank, after: int) -> list[tuple[int, str]]:
    """(id, what its vector is made from: its text, with its context for a conversation turn)."""
    rows = Memory.objects.filter(bank_id=bank.pk, embedding_dims__isnull=True, forgotten_at__isnull=True,
                                 id__gt=after).order_by("id").values_list("id", "text", "context")[:BATCH]
    return [(pk, embedding_text(text, context)) for pk, text, context in rows]


def _store(bank: Bank, rows: list[tuple[int, str]], literals: list[str], embedder: Embedder) -> None:
    with transaction.atomic():
        rows_vectors_fill(bank.pk, [pk for pk, _ in rows], literals, embedder.name, embedder.dimensions)


def bank_vectors_fill(bank: Bank, alive: Callable[[], None] | None = None) -> int:
    """Embed every memory of ``bank`` stored without its vector; return how many were filled.

    ``alive()`` runs after each stored batch (a job's heartbeat and cancel check; it may raise to stop:
    the batches stored stay, the rest are filled by the next run)."""
    embedder = bank_embedder(bank)
    filled = 0
    with EmbedPool(embedder, settings.MEMORYHUB_EMBED_WORKERS) as pool:
        rows = _pending(bank, 0)
        pending = pool.submit([text for _, text in rows])
        while rows:
            following = _pending(bank, rows[-1][0])
            ahead = pool.submit([text for _, text in following])
            _store(bank, rows, pending.get(), embedder)
            filled += len(rows)
            if alive is not None:
                alive()
            rows, pending = following, ahead
    return filled
