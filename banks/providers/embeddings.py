"""Text embeddings.

``minilm`` (default) is all-MiniLM-L6-v2 run on the CPU from weights that an
installed package ships (see banks.providers.minilm): semantic recall offline.

``hashing`` is deterministic and needs no model: signed feature hashing of
words, word pairs and character trigrams, L2-normalised. Near-identical texts
land close together, which is what dedup needs, and shared words pull related
texts together. Tests use it for speed.

A bank's model is never switched silently: when the local model cannot load in
a process (a missing file, out of memory), ``minilm`` builds an
``UnavailableEmbedder`` that names it. Writes to a bank that needs it are refused
(503, ``ModelUnavailable``), recall answers without its semantic arm and says so
in the trace, and no bank is ever pinned to another model in its place
(``embedder_status`` reports the reason; /health and the UI show it).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
from functools import lru_cache
from typing import Protocol

from django.conf import settings

from banks.providers.base import ProviderError
from banks.providers.remote_embeddings import REMOTE_KINDS, RemoteEmbedder, split_spec
from memoryhub.errors import ProviderUnavailable

_WORD = re.compile(r"\w+", re.UNICODE)
logger = logging.getLogger(__name__)
# Specs whose local model failed to load, with the reason (their banks refuse writes meanwhile).
_FALLBACKS: dict[str, str] = {}
# The local model's name, known without loading it (banks.providers.minilm says the same).
MINILM_NAME = "all-MiniLM-L6-v2"


class Embedder(Protocol):
    name: str

    @property
    def dimensions(self) -> int: ...  # a remote server's is known once it answered (read-only)

    def embed(self, texts: list[str]) -> list[list[float]]: ...

    # Embedders are shared, long-lived objects: recall caches query vectors per embedder.
    def __hash__(self) -> int: ...


# Words and their pieces repeat across texts (a bulk import embeds the same few thousand over and over):
# their buckets are kept: hashing each one again was most of what this embedder cost (9,100 -> 12,300
# texts/s on the import bench's texts, 14,700 once warm).
@functools.lru_cache(maxsize=1 << 16)  # about 12 MB when full
def _bucket(feature: str, dims: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dims, (1.0 if (value >> 63) & 1 else -1.0)


class ModelUnavailable(ProviderUnavailable):
    code = "embedding_model_unavailable"


class UnavailableEmbedder:
    """A model this process cannot load: it stands in for it by name and size, and refuses to embed."""

    available = False

    def __init__(self, spec: str, name: str, dimensions: int, reason: str) -> None:
        self.spec, self.name, self.dimensions, self.reason = spec, name, dimensions, reason

    def message(self) -> str:
        return (f"The embedding model {self.name} cannot load in this process ({self.reason}); writes to banks "
                f"that use it are refused until it loads, and recall answers by keyword")

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise ModelUnavailable(self.message(), model=self.name)


class TextVectors:
    """One request's vectors of one embedder, by the text each was made from: a request that needs a
    text's vector in two services (an auto-ingested fact's duplicate look, then its retain) embeds it
    once. Made per request and dropped with it; it is not a cache across requests."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._known: dict[str, list[float]] = {}

    def of(self, text: str) -> list[float]:
        vector = self._known.get(text)
        if vector is None:
            vector = self._known[text] = self.embedder.embed([text])[0]
        return vector


def embedder_available(embedder: Embedder) -> bool:
    return getattr(embedder, "available", True) is not False


class HashingEmbedder:
    # How far recall trusts this embedder's vectors beside the keyword arm (banks.recall_fusion
    # .vector_weights). Hashed words and their pieces are the keyword arm's own evidence again, with
    # collisions, not meaning (recall@10 0.45 alone where BM25 has 0.75 on bench/recall_quality.py).
    # Weighted like a model, its ranks pulled the fused hybrid below the keyword arm alone (0.708 <
    # 0.753); at half weight it is level with it there and above it on the regression sample.
    fusion_weight = 0.5

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.name = f"hashing-{dimensions}"

    def embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        words = [w.lower() for w in _WORD.findall(text)]
        features: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        features += [(f"b:{a} {b}", 0.5) for a, b in zip(words, words[1:], strict=False)]
        for word in words:
            padded = f"<{word}>"
            features += [(f"c:{padded[i:i + 3]}", 0.25) for i in range(len(padded) - 2)]
        touched: set[int] = set()
        for feature, weight in features:
            index, sign = _bucket(feature, self.dimensions)
            vector[index] += sign * weight
            touched.add(index)
        # Only the touched buckets (a few dozen of the dimensions) are summed and divided: the same
        # operations in the same order as over every bucket, since an untouched one adds 0.0 exactly.
        order = sorted(touched)
        norm = math.sqrt(sum(vector[i] * vector[i] for i in order))
        if norm == 0:
            # An empty or symbol-only text still needs a valid unit vector for cosine.
            vector[0] = 1.0
            return vector
        for i in order:
            vector[i] /= norm
        return vector

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


class OpenAICompatibleEmbedder(RemoteEmbedder):
    """An OpenAI-compatible ``/embeddings`` endpoint (``url`` is its base, ending in ``/v1``)."""

    def __init__(self, model: str, *, url: str, api_key: str, dimensions: int | None, timeout: float) -> None:
        super().__init__("openai", model, url=url, api_key=api_key, timeout=timeout, dimensions=dimensions)


class SentenceTransformerEmbedder:
    def __init__(self, model: str) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ProviderError(
                "sentence-transformers",
                "MEMORYHUB_EMBEDDINGS names sentence-transformers, which is not installed "
                "(pip install 'memoryhub[sentence-transformers]')",
            ) from None
        self._model = SentenceTransformer(model)
        self.dimensions = int(self._model.get_sentence_embedding_dimension())
        self.name = f"sentence-transformers:{model}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._model.encode(texts, normalize_embeddings=True)]


def build_embedder(spec: str) -> Embedder:
    """``minilm``, ``hashing``, ``hashing:<dims>``, ``sentence-transformers:<model>``, and the servers of
    banks.providers.remote_embeddings: ``openai:<model>[@<url>]``, ``tei:<model>@<url>``, ``ollama:<model>@<url>``."""
    kind, _, arg = spec.partition(":")
    if kind == "minilm":
        try:
            from banks.providers.minilm import MiniLMEmbedder

            return MiniLMEmbedder(threads=settings.MEMORYHUB_EMBED_THREADS or None,
                                  runtime=settings.MEMORYHUB_MINILM_RUNTIME, cache_dir=settings.VAR_DIR / "models",
                                  weights=settings.MEMORYHUB_MINILM_WEIGHTS)
        except Exception as exc:  # any failure to load the local model: reported, never replaced by another
            reason = f"{exc.__class__.__name__}: {exc}"
            logger.error("embedding model %s could not load (%s); writes to its banks are refused", spec, reason)
            _FALLBACKS[spec] = reason
            return UnavailableEmbedder(spec, MINILM_NAME, 384, reason)
    if kind == "hashing":
        return HashingEmbedder(int(arg) if arg else 384)
    if kind == "sentence-transformers":
        return SentenceTransformerEmbedder(arg or "all-MiniLM-L6-v2")
    if kind in REMOTE_KINDS:
        model, url = split_spec(arg)
        if kind in {"openai", "http"} and not url:
            # The server-wide endpoint, with its configured vector size.
            return RemoteEmbedder("openai", model or "text-embedding-3-small", url=settings.MEMORYHUB_EMBEDDINGS_URL,
                                  api_key=settings.MEMORYHUB_EMBEDDINGS_API_KEY,
                                  dimensions=settings.MEMORYHUB_EMBEDDINGS_DIMENSIONS,
                                  timeout=settings.MEMORYHUB_PROVIDER_TIMEOUT, spec=spec)
        if not url:
            raise ProviderError(spec, f"{kind}:<model>@<url>: name the server's URL (e.g. {kind}:{model or 'model'}"
                                      f"@http://localhost:{11434 if kind == 'ollama' else 8080})")
        return RemoteEmbedder(kind, model, url=url, api_key=settings.MEMORYHUB_EMBEDDINGS_API_KEY,
                              timeout=settings.MEMORYHUB_PROVIDER_TIMEOUT, spec=spec)
    raise ProviderError(spec, f"Unknown embeddings provider {spec!r}; use minilm, hashing, "
                              "sentence-transformers:<model>, openai:<model>[@<url>], tei:<model>@<url> "
                              "or ollama:<model>@<url>")


@lru_cache(maxsize=8)
def _cached(spec: str, url: str, timeout: float) -> Embedder:
    return build_embedder(spec)


def embedder_spec(embedder: Embedder) -> str | None:
    """The provider spec that builds ``embedder`` again (what a bank is pinned to), from its model name."""
    name = embedder.name
    if name.startswith("hashing-"):
        return "hashing:" + name.removeprefix("hashing-")
    if isinstance(embedder, UnavailableEmbedder):
        return embedder.spec
    if name == MINILM_NAME:
        return "minilm"
    if isinstance(embedder, RemoteEmbedder):
        return embedder.spec
    if name.startswith(("sentence-transformers:", "openai:")):
        return name
    return None


def get_embedder(spec: str | None = None) -> Embedder:
    spec = spec or settings.MEMORYHUB_EMBEDDINGS
    return _cached(spec, settings.MEMORYHUB_EMBEDDINGS_URL, settings.MEMORYHUB_PROVIDER_TIMEOUT)


def load_before_fork(spec: str | None = None) -> str | None:
    """Load the server's local embedding model now, in a process whose forked children serve with it
    (gunicorn's master: config.gunicorn_config.when_ready), and name it; None where nothing is loaded.

    Each web worker used to load its own copy on its first question, so three workers kept three
    copies of the weights (and of ONNX Runtime's packed int8 weights), and every embedding streamed its
    own copy through the caches the other workers and the database share. Loaded once before the
    fork, the copy is one set of pages all workers read, and a worker that replaces another (gunicorn's
    ``--max-requests``) starts with it (docs/benchmarks.md, "One copy of the model": more requests a
    second on the load bench, about a quarter less memory for the web workers).

    Only a local MiniLM running on the calling thread is loaded: remote and hashing embedders have
    nothing to share, and a model run on thread pools (``MEMORYHUB_EMBED_THREADS`` above 1) would
    reach a child without those threads."""
    from banks.providers.minilm import MiniLMEmbedder

    embedder = get_embedder(spec)
    if not isinstance(embedder, MiniLMEmbedder) or embedder.threads != 1:
        return None
    embedder.load_now()
    return f"{embedder.name} ({embedder.runtime}, {embedder.weights} weights)"


class HasEmbeddingProvider(Protocol):
    embedding_provider: str


def bank_embedder(bank: HasEmbeddingProvider) -> Embedder:
    """The embedder a bank's vectors were made with (its pinned provider, else the server default)."""
    return get_embedder(bank.embedding_provider or None)


def embedder_status(spec: str | None = None) -> dict[str, object]:
    """What the server's default embeddings really are: the configured spec, the model in use, any fallback."""
    spec = spec or settings.MEMORYHUB_EMBEDDINGS
    embedder = get_embedder(spec)
    reason = _FALLBACKS.get(spec)
    status: dict[str, object] = {
        "configured": spec, "model": embedder.name, "dimensions": embedder.dimensions,
        "semantic": embedder_available(embedder) and not embedder.name.startswith("hashing"),
        "available": embedder_available(embedder), "fallback": reason is not None, "fallback_reason": reason}
    # How a local model runs in this process: MiniLM's runtime (onnx, numpy) and weights (float, int8),
    # which MEMORYHUB_MINILM_WEIGHTS=auto picks by the CPU (banks.providers.minilm_onnx.weights_for).
    for key in ("runtime", "weights"):
        if isinstance(value := getattr(embedder, key, None), str):
            status[key] = value
    return status


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0
