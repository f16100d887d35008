"""all-MiniLM-L6-v2 on ONNX Runtime: the same weights and arithmetic as banks.providers.minilm, on
faster CPU kernels.

The graph is written here from the installed safetensors weights (no converted model file to ship or
fetch): BERT's embeddings, six encoder layers (ONNX Runtime's fused Attention, SkipLayerNormalization
and BiasGelu operators), then mean pooling over the attention mask; the L2 normalisation stays in numpy.
A question of a dozen word pieces is read through about 40 MB of weights, which numpy hands to BLAS
one small product at a time.
The vectors match the numpy model's to float32 rounding (tests/banks/test_minilm_onnx.py).

With int8 weights (``MEMORYHUB_MINILM_WEIGHTS=int8``) the 24 matrix products of the encoder read 8-bit
weights in blocks of 32 inputs, each block with its own scale (ONNX Runtime's MatMulNBits, whose int8
kernels also quantize the activations per block); the embeddings, layer norms, attention scores and
pooling stay float. Per-block scales keep every vector at cosine 0.999 or more from the float graph's
over the committed recall data, where whole-tensor dynamic quantization gave 0.988 (docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

OPSET = 17  # LayerNormalization
# Bumped whenever build_model writes a different graph: cached graphs of another version are not read.
GRAPH_VERSION = 2
MS = "com.microsoft"  # ONNX Runtime's contributed operators


def available() -> bool:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


# int8 weights: each matrix product's weights in blocks of this many inputs, one scale per block and output.
INT8_BLOCK = 32
WEIGHTS = ("float", "int8")


def int8_blocks(weight: np.ndarray, block: int = INT8_BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """``weight`` [N outputs, K inputs] as MatMulNBits reads 8-bit weights: uint8 [N, K / block, block]
    centred on 128 (symmetric, so no zero points are stored), and the float scales [N * K / block]."""
    outputs, inputs = weight.shape
    blocks = -(-inputs // block)
    padded = np.pad(weight, ((0, 0), (0, blocks * block - inputs))).reshape(outputs, blocks, block)
    scales = np.abs(padded).max(axis=-1) / 127.0
    scales[scales == 0] = 1.0
    quantized = np.clip(np.rint(padded / scales[..., None]), -127, 127).astype(np.int16) + 128
    return quantized.astype(np.uint8), scales.reshape(-1).astype(np.float32)


def build_model(model_dir: Path, weights: str = "float") -> bytes:
    """The serialized ONNX graph of the model in ``model_dir`` (inputs ids [B, L] int64, positions [L]
    int64, mask [B, L] float; output the mean-pooled, not yet normalised, [B, 384] float).

    ``weights``: "float", or "int8" (the encoder's matrix products on 8-bit weights, see OnnxForward)."""
    if weights not in WEIGHTS:
        raise ValueError(f"MiniLM weights are float or int8, not {weights!r}")
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    heads, eps = int(config["num_attention_heads"]), float(config["layer_norm_eps"])
    raw = {k.removeprefix("bert."): v.astype(np.float32) for k, v in
           load_file(str(model_dir / "model.safetensors")).items()}
    hidden = raw["embeddings.word_embeddings.weight"].shape[1]
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, domain: str | None = None, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], domain=domain, **attrs))
        return out

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return node("LayerNormalization", [x, const(prefix + ".g", raw[prefix + ".weight"]),
                                           const(prefix + ".b", raw[prefix + ".bias"])], out, axis=-1, epsilon=eps)

    def matmul(x: str, weight: np.ndarray, out: str) -> str:
        """x @ weight.T (``weight`` as stored: [outputs, inputs])."""
        if weights == "int8":
            blocks, scales = int8_blocks(weight)
            # accuracy_level 4: the activations are quantized per block too, onto the int8 kernels.
            return node("MatMulNBits", [x, const(out + ".q8", blocks), const(out + ".s", scales)], out, domain=MS,
                        K=weight.shape[1], N=weight.shape[0], bits=8, block_size=INT8_BLOCK, accuracy_level=4)
        return node("MatMul", [x, const(out + ".w", np.ascontiguousarray(weight.T))], out)

    def attention(x: str, qkv_w: np.ndarray, qkv_b: np.ndarray, mask_index: str, out: str) -> str:
        """Self-attention from the packed query/key/value weights [3 * hidden, hidden] and the 0/1 mask."""
        if weights == "int8":
            # The Attention operator takes float weights only: the packed product on 8-bit weights, then
            # the same kernel without weights (its bias added there).
            qkv = matmul(x, qkv_w, out + ".qkv")
            q, k, v = out + ".q", out + ".k", out + ".v"
            nodes.append(helper.make_node("Split", [qkv, const(out + ".split", np.array([hidden] * 3, dtype=np.int64))],
                                          [q, k, v], axis=2))
            return node("MultiHeadAttention", [q, k, v, const(out + ".b", qkv_b), mask_index], out, domain=MS,
                        num_heads=heads)
        return node("Attention", [x, const(out + ".w", np.ascontiguousarray(qkv_w.T)), const(out + ".b", qkv_b),
                                  mask_index], out, domain=MS, num_heads=heads)

    def skip_norm(x: str, skip: str, prefix: str, bias: np.ndarray, out: str) -> str:
        """layer_norm(x + bias + skip)."""
        return node("SkipLayerNormalization", [x, skip, const(prefix + ".g", raw[prefix + ".weight"]),
                                               const(prefix + ".b", raw[prefix + ".bias"]),
                                               const(out + ".bias", bias)], out, domain=MS, epsilon=eps)

    words = node("Gather", [const("word", raw["embeddings.word_embeddings.weight"]), "ids"], "emb.words")
    places = node("Gather", [const("position", raw["embeddings.position_embeddings.weight"]), "positions"],
                  "emb.places")
    x = node("Add", [node("Add", [words, places], "emb.sum"),
                     const("token_type", raw["embeddings.token_type_embeddings.weight"][0])], "emb.all")
    x = layer_norm(x, "embeddings.LayerNorm", "emb.out")
    # ONNX Runtime's own kernels for BERT's blocks (its com.microsoft operators): attention in one node
    # from the packed query/key/value weights and the 0/1 mask, the residual add, bias and layer norm in
    # one, the bias and exact-erf GELU in one. The same arithmetic as the plain operators, in fewer and
    # fused passes: a 6-piece question took 2.6 against 3.1 ms of CPU, a 52-piece text 11.3 against 11.9
    # (one thread, the best of 15 rounds of 100, busy machine); the vectors agree to float32 rounding.
    mask_index = node("Cast", ["mask"], "mask.i32", to=TensorProto.INT32)
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        qkv_w = np.concatenate([raw[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")])
        qkv_b = np.concatenate([raw[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
        context = attention(x, qkv_w, qkv_b, mask_index, f"l{i}.ctx")
        attended = matmul(context, raw[p + "attention.output.dense.weight"], f"l{i}.out")
        x = skip_norm(attended, x, p + "attention.output.LayerNorm", raw[p + "attention.output.dense.bias"],
                      f"l{i}.ln1")
        up = matmul(x, raw[p + "intermediate.dense.weight"], f"l{i}.up")
        gelu = node("BiasGelu", [up, const(f"l{i}.up.b", raw[p + "intermediate.dense.bias"])], f"l{i}.gelu",
                    domain=MS)
        down = matmul(gelu, raw[p + "output.dense.weight"], f"l{i}.down")
        x = skip_norm(down, x, p + "output.LayerNorm", raw[p + "output.dense.bias"], f"l{i}.ln2")
    weighted = node("Mul", [x, node("Unsqueeze", ["mask", const("axis2", np.array([2], dtype=np.int64))], "mask3")],
                    "pool.masked")
    summed = node("ReduceSum", [weighted, const("axis1", np.array([1], dtype=np.int64))], "pool.sum", keepdims=0)
    count = node("Max", [node("ReduceSum", ["mask", const("axis1b", np.array([1], dtype=np.int64))], "pool.n0",
                              keepdims=1), const("one_b", np.float32(1.0))], "pool.n")
    node("Div", [summed, count], "pooled")
    graph = helper.make_graph(
        nodes, "minilm", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "length"]),
                          helper.make_tensor_value_info("positions", TensorProto.INT64, ["length"]),
                          helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "length"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model.SerializeToString()


def cached_model(model_dir: Path, cache_dir: Path, weights: str = "float") -> Path:
    """The graph of ``model_dir`` as a file under ``cache_dir``, written on first use.

    Writing the graph takes about 3 s (idle machine; several times that on a busy one), and every web
    and worker process would pay it at its first question: the file is named after the weights' size
    and time and GRAPH_VERSION, and written whole under a temporary name, then renamed, so a process
    never reads half of one that another is writing."""
    stat = (model_dir / "model.safetensors").stat()
    key = hashlib.sha256(f"{model_dir.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{GRAPH_VERSION}".encode())
    path = cache_dir / f"minilm-{key.hexdigest()[:16]}{'' if weights == 'float' else '-' + weights}.onnx"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_bytes(build_model(model_dir, weights))
        os.replace(partial, path)
    return path


class OnnxForward:
    """The model's forward pass on an ONNX Runtime session of ``threads`` threads (None or 0: its default).

    ``cache_dir``: where the written graph is kept between processes (None: written in memory each time).
    ``weights``: see build_model."""

    def __init__(self, model_dir: Path, threads: int | None, cache_dir: Path | None = None,
                 weights: str = "float") -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        model: str | bytes | None = None
        if cache_dir is not None:
            try:
                model = str(cached_model(model_dir, cache_dir, weights))
            except OSError as exc:  # a read-only or full disk: the graph is written in memory, as without a cache
                logger.warning("could not keep the MiniLM graph under %s (%s)", cache_dir, exc)
        if model is None:
            model = build_model(model_dir, weights)
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        positions = np.arange(ids.shape[1], dtype=np.int64)
        pooled = self.session.run(["pooled"], {"ids": ids, "positions": positions, "mask": mask})[0]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0, 1.0, norms)
