"""The question's vector, computed once per process for each (model, question).

The semantic and temporal arms, the observation layer and a question asked again all share it:
embedding a question is the largest single cost of a recall on the local model.
"""

from __future__ import annotations

from functools import lru_cache

from banks.providers import Embedder
from banks.vectors import vector_literal


@lru_cache(maxsize=512)
def query_vector(embedder: Embedder, query: str) -> str:
    """The query's vector literal for ``embedder``."""
    return vector_literal(embedder.embed([query])[0])
