"""What an embedding worker process runs (banks.providers.embed_pool).

Imported by a freshly spawned interpreter before Django is set up, so nothing here imports a
model at module level: the initializer sets Django up, then builds the embedder once.
"""

from __future__ import annotations

from typing import Any

_EMBEDDER: Any = None


def start(spec: str) -> None:
    global _EMBEDDER  # noqa: PLW0603  (one embedder per worker process)
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from banks.providers.embeddings import build_embedder

    _EMBEDDER = build_embedder(spec)


def ready() -> bool:
    return _EMBEDDER is not None


def embed_literals(texts: list[str]) -> list[str]:
    from banks.vectors import vector_literal

    return [vector_literal(v) for v in _EMBEDDER.embed(texts)]
