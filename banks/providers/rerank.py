"""Rerankers: score (question, memory) pairs after fusion. Chosen by ``MEMORYHUB_RERANK``.

``none`` (default): no rerank stage. ``cross-encoder:<model>``: a sentence-transformers
CrossEncoder on this machine (extra ``sentence-transformers``). ``http`` (or ``http:<model>``):
a ``/rerank`` endpoint at ``MEMORYHUB_RERANK_URL`` speaking the common shape: a JSON body
``{"query", "documents" (also sent as "texts"), "model"?, "top_n"?}`` answered by
``{"results": [{"index", "relevance_score"}]}`` (Cohere, Jina) or ``[{"index", "score"}]``
(text-embeddings-inference). Banks opt in through ``config.recall.rerank``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol

from django.conf import settings

from banks.providers.base import ProviderError, RetryBudget, send_json


class Reranker(Protocol):
    name: str

    def score(self, query: str, documents: list[str]) -> list[float]:
        """One relevance score per document, in the documents' order (higher is more relevant)."""
        ...


def parse_rerank_body(provider: str, body: Any, count: int) -> list[float]:
    """Scores in document order from a Cohere/Jina (``results``) or TEI (a list) answer."""
    items = body.get("results", body.get("data")) if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise ProviderError(provider, f"{provider} answered with an unexpected JSON shape")
    scores: list[float | None] = [None] * count
    for item in items:
        if not isinstance(item, dict):
            raise ProviderError(provider, f"{provider} answered a result that is not an object")
        index, value = item.get("index"), item.get("relevance_score", item.get("score"))
        if not isinstance(index, int) or not 0 <= index < count or not isinstance(value, int | float):
            raise ProviderError(provider, f"{provider} answered a result without a valid index and score")
        scores[index] = float(value)
    if any(s is None for s in scores):
        raise ProviderError(provider, f"{provider} scored {sum(s is not None for s in scores)} of {count} documents")
    return [float(s) for s in scores if s is not None]


class HttpReranker:
    def __init__(self, *, url: str, model: str = "", api_key: str = "", timeout: float = 2.0) -> None:
        self.url = url
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.name = f"http:{model}" if model else "http"

    def score(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        payload: dict[str, Any] = {"query": query, "documents": documents, "texts": documents,
                                   "top_n": len(documents), "return_documents": False}
        if self.model:
            payload["model"] = self.model
        # Inside a recall: one more try after a short pause at most, and none after a timeout.
        body = send_json(self.name, self.url, payload, api_key=self.api_key, timeout=self.timeout,
                         budget=RetryBudget(attempts=2, max_wait=0.25, retry_timeouts=False))
        return parse_rerank_body(self.name, body, len(documents))


class CrossEncoderReranker:
    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ProviderError(
                "cross-encoder",
                "MEMORYHUB_RERANK names a cross-encoder, but sentence-transformers is not installed "
                "(pip install 'memoryhub[sentence-transformers]')",
            ) from None
        self._model = CrossEncoder(model)
        self.name = f"cross-encoder:{model}"

    def score(self, query: str, documents: list[str]) -> list[float]:
        if not documents:
            return []
        return [float(s) for s in self._model.predict([(query, d) for d in documents])]


def build_reranker(spec: str) -> Reranker | None:
    kind, _, arg = spec.partition(":")
    if kind in {"", "none"}:
        return None
    if kind == "cross-encoder" and arg:
        return CrossEncoderReranker(arg)
    if kind == "http":
        if not settings.MEMORYHUB_RERANK_URL:
            raise ProviderError("http", "MEMORYHUB_RERANK=http needs MEMORYHUB_RERANK_URL (the /rerank endpoint)")
        return HttpReranker(url=settings.MEMORYHUB_RERANK_URL, model=arg, api_key=settings.MEMORYHUB_RERANK_API_KEY,
                            timeout=settings.MEMORYHUB_RERANK_TIMEOUT)
    raise ProviderError(spec, f"Unknown reranker {spec!r}; use none, cross-encoder:<model> or http[:<model>]")


@lru_cache(maxsize=8)
def _cached(spec: str, url: str, timeout: float) -> Reranker | None:
    return build_reranker(spec)


def get_reranker() -> Reranker | None:
    """The configured reranker, or None when ``MEMORYHUB_RERANK`` is ``none``."""
    return _cached(settings.MEMORYHUB_RERANK, settings.MEMORYHUB_RERANK_URL, settings.MEMORYHUB_RERANK_TIMEOUT)
