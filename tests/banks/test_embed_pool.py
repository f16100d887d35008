"""Embedding workers give the very vectors the embedder gives in process, in order."""

from __future__ import annotations

from banks.providers.embed_pool import EmbedPool
from banks.providers.embeddings import HashingEmbedder
from banks.vectors import vector_literal


class RemoteLike:
    """Not a local embedder: embedded in the calling process, never forked."""

    name, dimensions = "remote-like", 3

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(t)), 0.0, 1.0] for t in texts]


def test_workers_return_the_in_process_vectors_in_order():
    embedder = HashingEmbedder(384)
    texts = [f"memory number {i} about topic {i % 7}" for i in range(203)]
    with EmbedPool(embedder, workers=2) as pool:
        assert pool._pool is not None
        first, second, empty = pool.submit(texts), pool.submit(texts[:5]), pool.submit([])
        assert second.get() == [vector_literal(v) for v in embedder.embed(texts[:5])]
        assert first.get() == [vector_literal(v) for v in embedder.embed(texts)]
        assert empty.get() == []


def test_a_remote_embedder_or_one_worker_stays_in_process():
    with EmbedPool(RemoteLike(), workers=4) as pool:
        assert pool._pool is None
        assert pool.submit(["ab", "c"]).get() == ["[2,0,1]", "[1,0,1]"]
    with EmbedPool(HashingEmbedder(8), workers=1) as pool:
        assert pool._pool is None
        assert pool.submit(["x"]).get() == [vector_literal(HashingEmbedder(8).embed_one("x"))]
