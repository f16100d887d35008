"""all-MiniLM-L6-v2 on ONNX Runtime: the same weights and arithmetic as banks.providers.minilm, on
faster CPU kernels.

The graph is written here from the installed safetensors weights (no converted model file to ship or
fetch): BERT's embeddings, six encoder layers (one matrix product for query, key and value), then mean
pooling over the attention mask; the L2 normalisation stays in numpy. ONNX Runtime fuses the layer
norms, GELU and attention and runs them with its own matrix kernels: a question of a dozen word pieces
is read through about 40 MB of weights, which numpy hands to BLAS one small product at a time.
The vectors match the numpy model's to float32 rounding (tests/banks/test_minilm_onnx.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

OPSET = 17  # LayerNormalization
# Bumped whenever build_model writes a different graph: cached graphs of another version are not read.
GRAPH_VERSION = 1


def available() -> bool:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def build_model(model_dir: Path) -> bytes:
    """The serialized ONNX graph of the model in ``model_dir`` (inputs ids [B, L] int64, positions [L]
    int64, mask [B, L] float; output the mean-pooled, not yet normalised, [B, 384] float)."""
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    heads, eps = int(config["num_attention_heads"]), float(config["layer_norm_eps"])
    raw = {k.removeprefix("bert."): v.astype(np.float32) for k, v in
           load_file(str(model_dir / "model.safetensors")).items()}
    hidden = raw["embeddings.word_embeddings.weight"].shape[1]
    head = hidden // heads
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return node("LayerNormalization", [x, const(prefix + ".g", raw[prefix + ".weight"]),
                                           const(prefix + ".b", raw[prefix + ".bias"])], out, axis=-1, epsilon=eps)

    def dense(x: str, weight: np.ndarray, bias: np.ndarray, out: str) -> str:
        product = node("MatMul", [x, const(out + ".w", np.ascontiguousarray(weight.T))], out + ".mm")
        return node("Add", [product, const(out + ".b", bias)], out)

    words = node("Gather", [const("word", raw["embeddings.word_embeddings.weight"]), "ids"], "emb.words")
    places = node("Gather", [const("position", raw["embeddings.position_embeddings.weight"]), "positions"],
                  "emb.places")
    x = node("Add", [node("Add", [words, places], "emb.sum"),
                     const("token_type", raw["embeddings.token_type_embeddings.weight"][0])], "emb.all")
    x = layer_norm(x, "embeddings.LayerNorm", "emb.out")
    # (1 - mask) * -1e9, broadcast over heads and query positions: [B, 1, 1, L].
    masked = node("Mul", [node("Sub", [const("one", np.float32(1.0)), "mask"], "mask.inv"),
                          const("minus", np.float32(-1e9))], "mask.bias0")
    bias = node("Unsqueeze", [masked, const("axes12", np.array([1, 2], dtype=np.int64))], "mask.bias")
    split_shape = const("heads_shape", np.array([0, 0, heads, head], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.float32(1.0 / math.sqrt(head)))
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        qkv_w = np.concatenate([raw[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")])
        qkv_b = np.concatenate([raw[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
        qkv = dense(x, qkv_w, qkv_b, f"l{i}.qkv")
        nodes.append(helper.make_node("Split", [qkv, const(f"l{i}.sizes", np.array([hidden] * 3, dtype=np.int64))],
                                      [f"l{i}.q0", f"l{i}.k0", f"l{i}.v0"], axis=-1))
        q, k, v = (node("Reshape", [f"l{i}.{n}0", split_shape], f"l{i}.{n}1") for n in "qkv")
        q = node("Transpose", [q], f"l{i}.q", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"l{i}.k", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"l{i}.v", perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"l{i}.qk"), scale], f"l{i}.scaled"), bias],
                      f"l{i}.scores")
        weights = node("Softmax", [scores], f"l{i}.softmax", axis=-1)
        context = node("Reshape", [node("Transpose", [node("MatMul", [weights, v], f"l{i}.ctx0")], f"l{i}.ctx1",
                                        perm=[0, 2, 1, 3]), merge_shape], f"l{i}.ctx")
        attended = dense(context, raw[p + "attention.output.dense.weight"], raw[p + "attention.output.dense.bias"],
                         f"l{i}.out")
        x = layer_norm(node("Add", [attended, x], f"l{i}.res1"), p + "attention.output.LayerNorm", f"l{i}.ln1")
        up = dense(x, raw[p + "intermediate.dense.weight"], raw[p + "intermediate.dense.bias"], f"l{i}.up")
        # GELU with the exact erf, as BERT defines it.
        erf = node("Erf", [node("Mul", [up, const(f"l{i}.rsqrt2", np.float32(1 / math.sqrt(2.0)))], f"l{i}.ups")],
                   f"l{i}.erf")
        gelu = node("Mul", [node("Mul", [up, const(f"l{i}.half", np.float32(0.5))], f"l{i}.uph"),
                            node("Add", [erf, const(f"l{i}.one", np.float32(1.0))], f"l{i}.erf1")], f"l{i}.gelu")
        down = dense(gelu, raw[p + "output.dense.weight"], raw[p + "output.dense.bias"], f"l{i}.down")
        x = layer_norm(node("Add", [down, x], f"l{i}.res2"), p + "output.LayerNorm", f"l{i}.ln2")
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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model.SerializeToString()


def cached_model(model_dir: Path, cache_dir: Path) -> Path:
    """The graph of ``model_dir`` as a file under ``cache_dir``, written on first use.

    Writing the graph takes about 3 s (idle machine; several times that on a busy one), and every web
    and worker process would pay it at its first question: the file is named after the weights' size
    and time and GRAPH_VERSION, and written whole under a temporary name, then renamed, so a process
    never reads half of one that another is writing."""
    weights = (model_dir / "model.safetensors").stat()
    key = hashlib.sha256(f"{model_dir.resolve()}:{weights.st_size}:{weights.st_mtime_ns}:{GRAPH_VERSION}".encode())
    path = cache_dir / f"minilm-{key.hexdigest()[:16]}.onnx"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_bytes(build_model(model_dir))
        os.replace(partial, path)
    return path


class OnnxForward:
    """The model's forward pass on an ONNX Runtime session of ``threads`` threads (None or 0: its default).

    ``cache_dir``: where the written graph is kept between processes (None: written in memory each time)."""

    def __init__(self, model_dir: Path, threads: int | None, cache_dir: Path | None = None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        model: str | bytes | None = None
        if cache_dir is not None:
            try:
                model = str(cached_model(model_dir, cache_dir))
            except OSError as exc:  # a read-only or full disk: the graph is written in memory, as without a cache
                logger.warning("could not keep the MiniLM graph under %s (%s)", cache_dir, exc)
        if model is None:
            model = build_model(model_dir)
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        positions = np.arange(ids.shape[1], dtype=np.int64)
        pooled = self.session.run(["pooled"], {"ids": ids, "positions": positions, "mask": mask})[0]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0, 1.0, norms)
