"""Embedding servers a user already runs: any OpenAI-compatible ``/embeddings``, Hugging Face
text-embeddings-inference (TEI) and Ollama.

A bank names one by its spec, ``<kind>:<model>[@<url>]``:

- ``openai:text-embedding-3-small`` (``MEMORYHUB_EMBEDDINGS_URL``, ``..._API_KEY``, ``..._DIMENSIONS``)
  or ``openai:nomic-embed-text@http://localhost:8080/v1`` (any OpenAI-compatible server: vLLM,
  llama.cpp, LM Studio, LocalAI, TEI's own ``/v1``);
- ``tei:BAAI/bge-small-en-v1.5@http://localhost:8080`` (TEI's ``POST /embed``);
- ``ollama:nomic-embed-text@http://localhost:11434`` (Ollama's ``POST /api/embed``).

The model name is the vectors' identity (``embedding_model`` on every row, what a bank is pinned to);
the URL only says where that model runs, so moving the server keeps a bank's vectors comparable.
Texts go in batches; every call retries transient failures (banks.providers.base). A server named by
URL tells its vectors' size by its first answer (or, asked before any, by embedding one short text).
"""

from __future__ import annotations

import threading
from typing import Any

from banks.providers.base import ProviderError, post_json, send_json

REMOTE_KINDS = ("openai", "http", "tei", "ollama")
# Texts per request: TEI refuses more than 32 per request by default (--max-client-batch-size).
BATCH = {"openai": 64, "http": 64, "tei": 32, "ollama": 64}
_PATHS = {"openai": "/embeddings", "http": "/embeddings", "tei": "/embed", "ollama": "/api/embed"}


def split_spec(arg: str) -> tuple[str, str]:
    """``model@url`` -> (model, url); the URL is empty when the spec names none. Pure."""
    model, at, url = arg.partition("@")
    if at and not url.startswith(("http://", "https://")):
        raise ProviderError(arg, f"the embedding server's URL must start with http:// or https:// (got {url!r})")
    return model.strip(), url.strip().rstrip("/")


class RemoteEmbedder:
    """One remote embedding model. ``dimensions`` given, or asked of the server on first use."""

    def __init__(self, kind: str, model: str, *, url: str, api_key: str, timeout: float,
                 dimensions: int | None = None, spec: str | None = None) -> None:
        if kind not in REMOTE_KINDS:
            raise ProviderError(kind, f"unknown embedding server kind {kind!r}")
        if not model:
            raise ProviderError(kind, f"{kind}: name the model ({kind}:<model>[@<url>])")
        self.kind = "openai" if kind == "http" else kind
        self.model = model
        self.name = f"{self.kind}:{model}"
        self.spec = spec or self.name
        self.url = url.rstrip("/") + _PATHS[self.kind]
        self.api_key = api_key
        self.timeout = timeout
        self._dimensions = dimensions
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RemoteEmbedder({self.spec!r})"

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            with self._lock:
                if self._dimensions is None:
                    self._dimensions = len(self._request(["dimensions"])[0])
        return self._dimensions

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        if self.kind == "tei":
            return {"inputs": texts, "truncate": True}
        return {"model": self.model, "input": texts}

    def _vectors(self, body: Any) -> list[list[float]]:
        if self.kind == "tei":
            rows = body
        elif self.kind == "ollama":
            rows = body.get("embeddings") if isinstance(body, dict) else None
        else:
            data = body.get("data") if isinstance(body, dict) else None
            rows = [row.get("embedding") for row in sorted(data, key=lambda r: r.get("index", 0))] \
                if isinstance(data, list) and all(isinstance(r, dict) for r in data) else None
        try:
            return [[float(x) for x in row] for row in rows]
        except (TypeError, ValueError):
            raise ProviderError(self.name, f"{self.name} answered without a list of vectors") from None

    def _request(self, texts: list[str]) -> list[list[float]]:
        if self.kind == "tei":
            body = send_json(self.name, self.url, self._payload(texts), api_key=self.api_key, timeout=self.timeout)
        else:
            body = post_json(self.name, self.url, self._payload(texts), api_key=self.api_key, timeout=self.timeout)
        vectors = self._vectors(body)
        if len(vectors) != len(texts):
            raise ProviderError(self.name, f"{self.name} returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def embed(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        size = BATCH[self.kind]
        for start in range(0, len(texts), size):
            out += self._request(texts[start:start + size])
        if out and self._dimensions is None:
            self._dimensions = len(out[0])  # the server told its size: no question needed for it
        if out and any(len(v) != self.dimensions for v in out):
            raise ProviderError(
                self.name, f"{self.name} returned {len(out)} vectors of the wrong size (expected "
                           f"{len(texts)} x {self.dimensions}; set MEMORYHUB_EMBEDDINGS_DIMENSIONS)")
        return out
