"""all-MiniLM-L6-v2 on ONNX Runtime: the same weights and arithmetic as banks.providers.minilm, on
faster CPU kernels.

The graph is written here from the installed safetensors weights (no converted model file to ship or
fetch): BERT's embeddings, six encoder layers (ONNX Runtime's fused Attention and BiasGelu operators,
layer norms in plain operators), then mean pooling over the attention mask; the L2 normalisation stays
in numpy.
A question of a dozen word pieces is read through about 40 MB of weights, which numpy hands to BLAS
one small product at a time.
The vectors match the numpy model's to float32 rounding (tests/banks/test_minilm_onnx.py).

With int8 weights (``MEMORYHUB_MINILM_WEIGHTS=int8``, which ``auto``, the default, picks on a CPU with
int8 dot-product instructions or AVX2: weights_for) the 24 matrix products of the encoder run on ONNX
Runtime's int8 matrix kernels (MatMulIntegerToFloat: 8-bit weights with one scale per output, 8-bit
inputs with one scale for the whole tensor; the weights signed or unsigned by the CPU, so that no
kernel saturates: signed_weights_for); the embeddings, layer norms, attention scores and pooling stay float.
Three things keep the vectors at cosine 0.9989 or more from the float graph's (mean 0.9997) over the
committed recall data, where plain whole-tensor quantization gave 0.984-0.988 (docs/benchmarks.md):
- each product's input channels are smoothed first (SmoothQuant): the channels whose activations run
  large (a few in the feed-forward's inputs, up to 13 times the median) are divided by a factor that
  their weights take on (in float this changes nothing);
- each row (one word piece) is divided by its own largest value before the product and multiplied
  back after, so one fixed scale holds every row, and a text's vector does not depend on the texts
  batched beside it;
- the FLOAT_CHANNELS input channels that still run largest after smoothing stay float, in a product of
  their own beside the int8 one.
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

OPSET = 17
# Bumped whenever build_model writes a different graph: cached graphs of another version are not read.
GRAPH_VERSION = 4
MS = "com.microsoft"  # ONNX Runtime's contributed operators


def available() -> bool:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


# int8 weights: the input channels of each product kept float beside its int8 part (module docstring). Of
# 0 / 2 / 4 / 8, 8 gave the closest vectors (cosine to float min 0.99704 / 0.99830 / 0.99877 / 0.99895), at
# the same cost as 2 or 4 (docs/benchmarks.md, "int8 products on ONNX Runtime's integer kernels").
FLOAT_CHANNELS = 8
# Where a row of a product's input is all zeros, its largest value is taken as this instead (no 0 / 0).
ROW_FLOOR = np.float32(1e-12)
# The zero point of the 8-bit inputs, and of the weights where they are stored unsigned.
UNSIGNED_ZERO = 128
WEIGHTS = ("float", "int8")
# The CPU features (as Linux's /proc/cpuinfo names them) of an int8 dot product in one instruction, into
# 32-bit sums (x86's VNNI or AMX, ARM's dot product): the int8 graph's weights are signed there.
INT8_DOT_PRODUCT_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm"})
# x86 without them: ONNX Runtime's kernel for unsigned inputs and signed weights adds each two products
# in a 16-bit sum that saturates (2 * 255 * 127 > 32767), and the vectors fell to cosine 0.99756 of the
# float ones (VNNI: 0.99895). Weights stored unsigned about 128 take the kernel that widens both sides to
# 16 bits first: the VNNI graph's vectors to five digits, and on an AVX2-only CPU a request's embedding
# at 70/30 in 6.18 ms against float's 8.24 (docs/benchmarks.md, "int8 weights on a CPU without VNNI").
INT8_AVX2_FLAGS = frozenset({"avx2"})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags (x86's ``flags``, ARM's ``Features``); none where the file cannot be read."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            flags.update(value.split())
    return frozenset(flags)


def weights_for(flags: frozenset[str]) -> str:
    """The cheaper weights on a CPU of these flags: int8 where it has int8 dot products or AVX2, else float
    (also where the flags are unknown, and on ARM without the dot product: not measured)."""
    return "int8" if flags & (INT8_DOT_PRODUCT_FLAGS | INT8_AVX2_FLAGS) else "float"


def signed_weights_for(flags: frozenset[str]) -> bool:
    """Whether the int8 graph's weights are signed on a CPU of these flags: only where it has an int8 dot
    product. Unsigned weights give the same vectors on every CPU; the signed ones are what was measured
    faster on the CPUs that have one."""
    return bool(flags & INT8_DOT_PRODUCT_FLAGS)


# The largest |activation| of each input channel of each product, over the committed recall data's texts
# (bench/minilm_activations.py writes it), and how much of the channels' spread the weights take on:
# s = max|x| ** alpha / max|w| ** (1 - alpha). Of 0.35 / 0.5 / 0.65 / 0.8, 0.65 gave the closest vectors at
# the 1st percentile and mean, 0.5 at the minimum by 0.00006 (docs/benchmarks.md).
ACTIVATIONS = Path(__file__).with_name("minilm_activations.npz")
SMOOTH_ALPHA = 0.65


def product_inputs(layers: int) -> dict[str, str]:
    """The graph's name for the input of each product, ``"{layer}.{product}"`` -> tensor name."""
    names: dict[str, str] = {}
    for i in range(layers):
        names |= {f"{i}.qkv": "emb.out" if i == 0 else f"l{i - 1}.ln2", f"{i}.out": f"l{i}.ctx",
                  f"{i}.up": f"l{i}.ln1", f"{i}.down": f"l{i}.gelu"}
    return names


def smoothing(activations: np.ndarray, weight: np.ndarray, alpha: float = SMOOTH_ALPHA) -> np.ndarray:
    """Per input channel of ``weight`` [outputs, inputs], the factor its activations are divided by and its
    weights multiplied by (the product unchanged in exact arithmetic)."""
    x = np.maximum(activations.astype(np.float32), 1e-5)
    w = np.maximum(np.abs(weight).max(axis=0), 1e-5)
    return (x ** alpha / w ** (1.0 - alpha)).astype(np.float32)


def int8_columns(weight: np.ndarray, signed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``weight`` [N outputs, K inputs] as MatMulIntegerToFloat reads 8-bit weights: int8 [K, N], symmetric
    (no zero points), and the float scales [N], one per output. ``signed=False``: the same numbers plus
    128 as uint8, to be read with a zero point of 128 (signed_weights_for)."""
    scales = np.abs(weight).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    quantized = np.clip(np.rint(weight / scales[:, None]), -127, 127).astype(np.int8)
    if not signed:
        quantized = (quantized.astype(np.int16) + UNSIGNED_ZERO).astype(np.uint8)
    return np.ascontiguousarray(quantized.T), scales.astype(np.float32)


def float_channels(weight: np.ndarray, count: int = FLOAT_CHANNELS) -> np.ndarray:
    """The ``count`` input channels of ``weight`` [outputs, inputs] with the largest weights, in order.

    On a smoothed product these are also the channels whose activations run largest: smoothing leaves a
    channel's largest activation at (x * w) ** (1 - alpha) and its largest weight at (x * w) ** alpha, so
    both order the channels alike (smoothing's x and w being the channel's before it)."""
    return np.sort(np.argsort(-np.abs(weight).max(axis=0), kind="stable")[:count])


def build_model(model_dir: Path, weights: str = "float", smooth: bool | None = None,
                kept_float: int = FLOAT_CHANNELS, signed: bool | None = None) -> bytes:
    """The serialized ONNX graph of the model in ``model_dir`` (inputs ids [B, L] int64, positions [L]
    int64, mask [B, L] float; output the mean-pooled, not yet normalised, [B, 384] float).

    ``weights``: "float", or "int8" (the encoder's matrix products on 8-bit weights, see OnnxForward).
    ``smooth``: the products' inputs smoothed (module docstring); by default with int8 weights only.
    ``kept_float``: how many input channels of each int8 product stay float (bench/embed_cpu_bench.py
    compares others). ``signed``: the int8 weights signed or unsigned (signed_weights_for); by default as
    this CPU runs them faithfully."""
    if weights not in WEIGHTS:
        raise ValueError(f"MiniLM weights are float or int8, not {weights!r}")
    if smooth is None:
        smooth = weights == "int8"
    if signed is None:
        signed = signed_weights_for(cpu_flags())
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    heads, eps = int(config["num_attention_heads"]), float(config["layer_norm_eps"])
    raw = {k.removeprefix("bert."): v.astype(np.float32) for k, v in
           load_file(str(model_dir / "model.safetensors")).items()}
    hidden = raw["embeddings.word_embeddings.weight"].shape[1]
    activations = dict(np.load(ACTIVATIONS)) if smooth else {}
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, domain: str | None = None, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], domain=domain, **attrs))
        return out

    def layer_norm(x: str, prefix: str, out: str) -> str:
        """BERT's layer norm in plain operators: with ONNX Runtime's LayerNormalization and
        SkipLayerNormalization kernels a 52-piece text took 0.6 ms more of 6.3 (docs/benchmarks.md). Written
        with Mul and Reciprocal, which ONNX Runtime's layer norm fusion does not match (and it is off)."""
        mean = node("ReduceMean", [x], out + ".mean", axes=[-1], keepdims=1)
        centred = node("Sub", [x, mean], out + ".c")
        var = node("ReduceMean", [node("Mul", [centred, centred], out + ".c2")], out + ".var", axes=[-1], keepdims=1)
        inv = node("Reciprocal", [node("Sqrt", [node("Add", [var, const(out + ".eps", np.float32(eps))], out + ".ve")],
                                       out + ".sd")], out + ".inv")
        scaled = node("Mul", [node("Mul", [centred, inv], out + ".n"), const(prefix + ".g", raw[prefix + ".weight"])],
                      out + ".ng")
        return node("Add", [scaled, const(prefix + ".b", raw[prefix + ".bias"])], out)

    def smoothed(x: str, factors: np.ndarray, out: str) -> str:
        """``x`` divided by a product's smoothing factors."""
        return node("Mul", [x, const(out + ".unsmooth", (1.0 / factors).astype(np.float32))], out + ".smooth")

    def matmul(x: str, weight: np.ndarray, out: str, product: str | None = None) -> str:
        """x @ weight.T (``weight`` as stored: [outputs, inputs]); ``product`` ("{layer}.{kind}"): its input
        smoothed here first, when the graph is."""
        if smooth and product is not None:
            factors = smoothing(activations[product], weight)
            x, weight = smoothed(x, factors, out), weight * factors
        if weights == "int8":
            return int8_product(x, weight, out)
        return node("MatMul", [x, const(out + ".w", np.ascontiguousarray(weight.T))], out)

    def int8_product(x: str, weight: np.ndarray, out: str) -> str:
        """x @ weight.T: the int8 part on every channel but the widest, each row of its input divided by the
        row's largest value (the integer kernels take one scale for the whole input), plus the widest
        channels' part in float (picked out of x by a 0/1 matrix: a Gather on the last axis cost more
        than the whole int8 product). ONNX Runtime's MatMulNBits (8-bit weights in blocks, the graph
        before GRAPH_VERSION 4) ran a 52-piece retain in 8.6 ms on a CPU with AMX, about as long as float;
        these kernels take 4.5."""
        wide = float_channels(weight, kept_float)
        keep = np.ones(weight.shape[1], np.float32)
        keep[wide] = 0.0
        rest = node("Mul", [x, const(out + ".keep", keep)], out + ".rest")
        peak = node("Max", [node("ReduceMax", [node("Abs", [rest], out + ".abs")], out + ".rowmax", axes=[-1],
                                 keepdims=1), const(out + ".floor", ROW_FLOOR)], out + ".peak")
        quantized, scales = int8_columns(weight * keep, signed)
        # Each row now runs from -1 to 1: one fixed scale holds them (uint8 about 128: ONNX Runtime's fast
        # kernels take unsigned inputs), whatever the batch beside them.
        a_scale, a_zero = const(out + ".as", np.float32(1.0 / 127)), const(out + ".az", np.uint8(UNSIGNED_ZERO))
        rows_q = node("QuantizeLinear", [node("Div", [rest, peak], out + ".rows"), a_scale, a_zero], out + ".rq")
        product = [rows_q, const(out + ".q8", quantized), a_scale, const(out + ".s", scales), a_zero]
        if not signed:
            product.append(const(out + ".wz", np.full(quantized.shape[1], UNSIGNED_ZERO, np.uint8)))
        narrow = node("MatMulIntegerToFloat", product, out + ".q", domain=MS)
        narrow = node("Mul", [narrow, peak], out + ".narrow")
        if not len(wide):
            return node("Identity", [narrow], out)
        select = np.zeros((weight.shape[1], len(wide)), np.float32)
        select[wide, np.arange(len(wide))] = 1.0
        picked = node("MatMul", [x, const(out + ".pick", select)], out + ".picked")
        widest = node("MatMul", [picked, const(out + ".wide_w", np.ascontiguousarray(weight[:, wide].T))], out + ".wide")
        return node("Add", [narrow, widest], out)

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
        return layer_norm(node("Add", [node("Add", [x, const(out + ".bias", bias)], out + ".xb"), skip], out + ".sum"),
                          prefix, out)

    words = node("Gather", [const("word", raw["embeddings.word_embeddings.weight"]), "ids"], "emb.words")
    places = node("Gather", [const("position", raw["embeddings.position_embeddings.weight"]), "positions"],
                  "emb.places")
    x = node("Add", [node("Add", [words, places], "emb.sum"),
                     const("token_type", raw["embeddings.token_type_embeddings.weight"][0])], "emb.all")
    x = layer_norm(x, "embeddings.LayerNorm", "emb.out")
    # ONNX Runtime's own kernels for attention (one node from the packed query/key/value weights and the
    # 0/1 mask) and for the bias and exact-erf GELU (one node): the same arithmetic as the plain operators
    # in fewer passes (a 6-piece question 2.6 against 3.1 ms of CPU, busy machine, with its fused layer
    # norms too, which the plain ones have since replaced); the vectors agree to float32 rounding.
    mask_index = node("Cast", ["mask"], "mask.i32", to=TensorProto.INT32)
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."
        qkv_w = np.concatenate([raw[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")])
        qkv_b = np.concatenate([raw[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
        out_w = raw[p + "attention.output.dense.weight"]
        x_in = x
        if smooth:
            qkv_s, out_s = smoothing(activations[f"{i}.qkv"], qkv_w), smoothing(activations[f"{i}.out"], out_w)
            x_in, qkv_w = smoothed(x, qkv_s, f"l{i}.qkv"), qkv_w * qkv_s
            # The attention output's input is a mix of the values, channel by channel: its smoothing is
            # folded into the value weights and bias, with no operator of its own.
            qkv_b, out_w = qkv_b.copy(), out_w * out_s
            qkv_w[2 * hidden:] /= out_s[:, None]
            qkv_b[2 * hidden:] /= out_s
        context = attention(x_in, qkv_w, qkv_b, mask_index, f"l{i}.ctx")
        attended = matmul(context, out_w, f"l{i}.out")
        x = skip_norm(attended, x, p + "attention.output.LayerNorm", raw[p + "attention.output.dense.bias"],
                      f"l{i}.ln1")
        up = matmul(x, raw[p + "intermediate.dense.weight"], f"l{i}.up", f"{i}.up")
        gelu = node("BiasGelu", [up, const(f"l{i}.up.b", raw[p + "intermediate.dense.bias"])], f"l{i}.gelu",
                    domain=MS)
        down = matmul(gelu, raw[p + "output.dense.weight"], f"l{i}.down", f"{i}.down")
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
    never reads half of one that another is writing. Writing one removes the graphs of the same weights
    that an earlier GRAPH_VERSION (or an earlier copy of the weights) left there: 60-90 MB each, read by
    no process started since (a running one holds its graph in memory, not the file)."""
    stat = (model_dir / "model.safetensors").stat()
    key = hashlib.sha256(f"{model_dir.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:{GRAPH_VERSION}".encode())
    signed = signed_weights_for(cpu_flags())
    # A directory shared by hosts of other CPUs keeps each int8 layout in a file of its own.
    suffix = "" if weights == "float" else "-" + weights + ("" if signed else "u")
    path = cache_dir / f"minilm-{key.hexdigest()[:16]}{suffix}.onnx"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_bytes(build_model(model_dir, weights, signed=signed))
        os.replace(partial, path)
        for stale in cache_dir.glob(f"minilm-{'?' * 16}{suffix}.onnx"):
            if stale != path:
                stale.unlink(missing_ok=True)
    return path


NO_FUSION = ["LayerNormFusion", "SkipLayerNormFusion"]


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
        # The layer norms stay plain operators (build_model): ONNX Runtime's fused kernels are slower here.
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"],
                                            disabled_optimizers=NO_FUSION)

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        positions = np.arange(ids.shape[1], dtype=np.int64)
        pooled = self.session.run(["pooled"], {"ids": ids, "positions": positions, "mask": mask})[0]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0, 1.0, norms)
