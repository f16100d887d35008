"""MiniLM on ONNX Runtime gives the numpy model's vectors (banks.providers.minilm_onnx)."""

from __future__ import annotations

import numpy as np
import pytest

from banks.providers import minilm_onnx
from banks.providers.minilm import MiniLMEmbedder

pytestmark = pytest.mark.skipif(not minilm_onnx.available(), reason="onnxruntime is not installed")

TEXTS = [
    "The heron waded at dawn.",
    "Alice moved the billing cluster to the new region on 3 March; refunds are still pending.",
    "x",
    "",
    "Un texte en français, avec des accents: déjà vu.",
    " ".join(["word"] * 400),  # past the 256 word pieces the model reads
]


def test_onnx_vectors_are_the_numpy_vectors() -> None:
    numpy_model, onnx_model = MiniLMEmbedder(runtime="numpy"), MiniLMEmbedder(runtime="onnx")
    assert onnx_model.runtime == "onnx" and numpy_model.runtime == "numpy"
    # One batch of texts of different lengths (padding and its mask), then each text alone.
    batch_a, batch_b = numpy_model.embed_array(TEXTS), onnx_model.embed_array(TEXTS)
    alone = np.array([onnx_model.embed_one(t) for t in TEXTS], dtype=np.float32)
    for other in (batch_b, alone):
        cosines = (batch_a * other).sum(axis=1)
        assert cosines.min() > 0.99999, cosines
        assert np.abs(batch_a - other).max() < 1e-4
    assert not hasattr(onnx_model, "layers")  # the numpy weights are not held beside the session


def test_auto_runs_onnx_when_installed() -> None:
    assert MiniLMEmbedder(runtime="auto").runtime == "onnx"
    assert MiniLMEmbedder(runtime="numpy").runtime == "numpy"


def test_the_written_graph_is_kept_on_disk_and_read_back(tmp_path, monkeypatch) -> None:
    first = MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path / "models")
    vector = first.embed_one("The heron waded at dawn.")
    kept = list((tmp_path / "models").glob("minilm-*.onnx"))
    assert len(kept) == 1 and not list((tmp_path / "models").glob("*.partial"))

    def no_build(model_dir):  # noqa: ANN001, ANN202
        raise AssertionError("the graph was written again")

    monkeypatch.setattr(minilm_onnx, "build_model", no_build)
    again = MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path / "models").embed_one("The heron waded at dawn.")
    assert np.allclose(vector, again)


def test_a_new_graph_version_removes_the_graphs_an_earlier_one_left(tmp_path, monkeypatch) -> None:
    models = tmp_path / "models"
    MiniLMEmbedder(runtime="onnx", weights="int8", cache_dir=models).embed_one("x")
    MiniLMEmbedder(runtime="onnx", cache_dir=models).embed_one("x")
    earlier = {p.name for p in models.glob("minilm-*.onnx")}
    unrelated = models / "notes.onnx"
    unrelated.write_bytes(b"kept")
    monkeypatch.setattr(minilm_onnx, "GRAPH_VERSION", minilm_onnx.GRAPH_VERSION + 1)
    MiniLMEmbedder(runtime="onnx", weights="int8", cache_dir=models).embed_one("x")
    now = {p.name for p in models.glob("minilm-*.onnx")}
    # The earlier int8 graph is gone, the float one (other weights) stays until float is written again.
    assert len(now) == 2 and len(now - earlier) == 1
    assert [name for name in now & earlier if not name.endswith("-int8.onnx")] == list(now & earlier)
    assert unrelated.exists()


def test_a_cache_folder_that_cannot_be_written_falls_back_to_memory(tmp_path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    embedder = MiniLMEmbedder(runtime="onnx", cache_dir=blocked / "models")
    assert len(embedder.embed_one("still embedded")) == 384


def test_the_graph_runs_bert_blocks_on_onnx_runtime_fused_kernels() -> None:
    """Attention and the GELU are ONNX Runtime's fused operators, one node each per layer (fewer passes
    over the activations); the 13 layer norms are plain operators, faster than its fused kernels here."""
    import onnx

    from banks.providers.minilm import bundled_model_dir

    graph = onnx.load_from_string(minilm_onnx.build_model(bundled_model_dir())).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("Attention") == 6 and ops.count("BiasGelu") == 6
    assert ops.count("ReduceMean") == 26 and "SkipLayerNormalization" not in ops and "LayerNormalization" not in ops
    assert "Softmax" not in ops and "Erf" not in ops
    assert not any(node.output[0].endswith(".smooth") for node in graph.node)  # float: nothing smoothed


def test_smoothed_inputs_give_the_numpy_vectors_in_float(monkeypatch) -> None:
    """The int8 graph's smoothing (each product's input channels divided by a factor its weights take on,
    the attention output's folded into the value weights) written with float weights: the same vectors as
    the numpy model to float32 rounding, so the int8 graph's only distance from them is its 8-bit weights."""
    import functools

    import onnx

    from banks.providers.minilm import bundled_model_dir

    smoothed = functools.partial(minilm_onnx.build_model, smooth=True)
    graph = onnx.load_from_string(smoothed(bundled_model_dir())).graph
    factors = [node for node in graph.node if node.output[0].endswith(".smooth")]
    assert len(factors) == 18  # query/key/value, up and down in each of 6 layers; the output's has none
    monkeypatch.setattr(minilm_onnx, "build_model", smoothed)
    numpy_model, onnx_model = MiniLMEmbedder(runtime="numpy"), MiniLMEmbedder(runtime="onnx")
    expected, got = numpy_model.embed_array(TEXTS), onnx_model.embed_array(TEXTS)
    assert (expected * got).sum(axis=1).min() > 0.99999
    assert np.abs(expected - got).max() < 1e-4


def test_the_kept_activations_cover_every_product_of_the_model() -> None:
    """bench/minilm_activations.py's file: one largest |activation| per input channel of each product,
    and the smoothing it gives moves the channels apart (not every factor alike)."""
    from safetensors.numpy import load_file

    from banks.providers.minilm import bundled_model_dir

    activations = dict(np.load(minilm_onnx.ACTIVATIONS))
    assert sorted(activations) == sorted(minilm_onnx.product_inputs(6))
    raw = load_file(str(bundled_model_dir() / "model.safetensors"))
    for i in range(6):
        up = raw[f"encoder.layer.{i}.intermediate.dense.weight"]
        down = raw[f"encoder.layer.{i}.output.dense.weight"]
        assert activations[f"{i}.qkv"].shape == activations[f"{i}.up"].shape == (up.shape[1],)
        assert activations[f"{i}.down"].shape == (down.shape[1],) and (activations[f"{i}.down"] > 0).all()
        factors = minilm_onnx.smoothing(activations[f"{i}.down"], down)
        assert factors.max() > 2 * factors.min()


def longest_recall_turns(count: int) -> list[str]:
    """The ``count`` longest turns of the committed recall data (bench/embed_cpu_bench.py reads them all)."""
    import json
    from pathlib import Path

    turns: set[str] = set()
    for name in ("recall_sample.json", "recall_invented.json", "recall_multihop_invented.json"):
        for instance in json.loads((Path(__file__).parents[1] / "fixtures" / name).read_text()):
            turns.update(turn["content"] for session in instance["haystack_sessions"] for turn in session)
    return sorted(turns, key=lambda text: (len(text), text))[-count:]


def test_int8_weights_stay_beside_the_float_vectors() -> None:
    """The int8 graph (MEMORYHUB_MINILM_WEIGHTS=int8): ONNX Runtime's int8 products on smoothed inputs, each
    row scaled alone and the widest channels float, every vector close enough to the float model's that a
    bank's stored float vectors and new int8 ones compare, on this CPU's kernels. Long texts are where
    a saturating kernel shows (signed weights on an AVX2-only CPU: cosine 0.9976 on these turns)."""
    float_model, int8_model = MiniLMEmbedder(runtime="onnx"), MiniLMEmbedder(runtime="onnx", weights="int8")
    texts = TEXTS + longest_recall_turns(32)
    batch = int8_model.embed_array(texts)
    alone = np.array([int8_model.embed_one(t) for t in TEXTS], dtype=np.float32)
    assert np.isfinite(batch).all()
    # Padding and its mask change nothing: each row is scaled to its own largest value and quantized with
    # one fixed scale, so a text's vector does not depend on the texts batched beside it.
    assert np.abs(batch[:len(TEXTS)] - alone).max() < 1e-4
    cosines = (float_model.embed_array(texts) * batch).sum(axis=1)
    assert cosines[:len(TEXTS)].min() > 0.998, cosines  # "x" and "" the farthest: 0.9989, 0.9985
    assert cosines[len(TEXTS):].min() > 0.999, cosines
    assert int8_model.name == float_model.name


def test_the_int8_graph_runs_every_matrix_product_on_8_bit_weights(tmp_path) -> None:
    import onnx
    from onnx import numpy_helper

    from banks.providers.minilm import bundled_model_dir

    graph = onnx.load_from_string(minilm_onnx.build_model(bundled_model_dir(), "int8", signed=True)).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulIntegerToFloat") == 24 and ops.count("MultiHeadAttention") == 6
    weights = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    products = [node for node in graph.node if node.op_type == "MatMulIntegerToFloat"]
    int8 = [weights[node.input[1]] for node in products]
    assert all(w.dtype == np.int8 for w in int8) and sum(w.size for w in int8) == 6 * (3 + 1 + 4 + 4) * 384 * 384
    assert all(len(node.input) == 5 for node in products)  # symmetric: no zero point of the weights
    # Float products only pick out and multiply the FLOAT_CHANNELS widest channels of each product.
    for node in graph.node:
        if node.op_type == "MatMul":
            assert minilm_onnx.FLOAT_CHANNELS in weights[node.input[1]].shape, node.name
    assert ops.count("MatMul") == 2 * 24
    assert sum(node.output[0].endswith(".smooth") for node in graph.node) == 18
    assert "Attention" not in ops and "MatMulNBits" not in ops
    # Kept in its own file beside the float graph's.
    # Kept in its own file beside the float graph's, named after its layout on this CPU.
    MiniLMEmbedder(runtime="onnx", weights="int8", cache_dir=tmp_path).embed_one("x")
    MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path).embed_one("x")
    layout = "-int8.onnx" if minilm_onnx.signed_weights_for(minilm_onnx.cpu_flags()) else "-int8u.onnx"
    assert sorted(p.name.endswith(layout) for p in tmp_path.glob("minilm-*.onnx")) == [False, True]


def test_unsigned_int8_weights_are_the_signed_ones_plus_128_read_with_a_zero_point() -> None:
    import onnx
    from onnx import numpy_helper

    from banks.providers.minilm import bundled_model_dir

    graphs = {signed: onnx.load_from_string(minilm_onnx.build_model(bundled_model_dir(), "int8", signed=signed)).graph
              for signed in (True, False)}
    weights = {signed: {init.name: numpy_helper.to_array(init) for init in graph.initializer}
               for signed, graph in graphs.items()}
    for node in graphs[False].node:
        if node.op_type != "MatMulIntegerToFloat":
            continue
        unsigned, zero = weights[False][node.input[1]], weights[False][node.input[5]]
        assert unsigned.dtype == np.uint8 and zero.dtype == np.uint8 and zero.shape == (unsigned.shape[1],)
        assert (zero == 128).all()
        np.testing.assert_array_equal(unsigned.astype(np.int16) - 128, weights[True][node.input[1]])


@pytest.mark.skipif(not minilm_onnx.signed_weights_for(minilm_onnx.cpu_flags()),
                    reason="signed weights saturate ONNX Runtime's kernels on a CPU without an int8 dot product")
def test_on_a_cpu_with_int8_dot_products_both_layouts_give_the_same_vectors() -> None:
    """Both are exact integer sums there: a graph file written on another CPU gives the same vectors."""
    import onnxruntime as ort

    from banks.providers.minilm import bundled_model_dir

    model = MiniLMEmbedder(runtime="onnx", weights="int8")
    signed = model.embed_array(longest_recall_turns(8))
    model._onnx.session = ort.InferenceSession(
        minilm_onnx.build_model(bundled_model_dir(), "int8", signed=False), providers=["CPUExecutionProvider"],
        disabled_optimizers=minilm_onnx.NO_FUSION)
    assert np.abs(model.embed_array(longest_recall_turns(8)) - signed).max() < 1e-5


def test_int8_columns_round_each_weight_to_its_outputs_scale() -> None:
    weight = np.array([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [3.0, 1.5, -0.01]], dtype=np.float32)
    quantized, scales = minilm_onnx.int8_columns(weight)
    assert quantized.dtype == np.int8 and quantized.shape == (3, 3)  # [inputs, outputs]
    np.testing.assert_allclose(scales, [1.0 / 127, 1.0, 3.0 / 127], rtol=1e-6)  # an all-zero output: 1, not 0
    assert np.abs(quantized).max() == 127 and quantized[:, 1].tolist() == [0, 0, 0]
    assert np.abs(quantized.T * scales[:, None] - weight).max() <= scales.max() / 2 + 1e-7
    unsigned, same_scales = minilm_onnx.int8_columns(weight, signed=False)
    assert unsigned.dtype == np.uint8 and unsigned.min() >= 1 and unsigned[:, 1].tolist() == [128, 128, 128]
    np.testing.assert_array_equal(unsigned.astype(np.int16) - 128, quantized)
    np.testing.assert_array_equal(same_scales, scales)


def test_float_channels_are_the_inputs_with_the_largest_weights() -> None:
    weight = np.array([[0.1, -9.0, 0.2, 0.3], [0.1, 0.2, 0.2, 4.0]], dtype=np.float32)
    assert minilm_onnx.float_channels(weight, 2).tolist() == [1, 3]
    assert minilm_onnx.float_channels(weight, 1).tolist() == [1]
    assert minilm_onnx.float_channels(weight, 0).tolist() == []


def test_without_onnx_runtime_int8_runs_the_float_weights_and_unknown_weights_are_refused() -> None:
    assert MiniLMEmbedder(runtime="numpy", weights="int8").weights == "float"
    assert MiniLMEmbedder(runtime="onnx", weights="int8").weights == "int8"
    with pytest.raises(ValueError):
        MiniLMEmbedder(runtime="onnx", weights="int4")


def test_the_server_builds_minilm_with_the_configured_weights(settings) -> None:
    from banks.providers.embeddings import build_embedder

    assert settings.MEMORYHUB_MINILM_WEIGHTS == "auto"  # the default (docs/benchmarks.md: quality, CPU)
    on_this_cpu = minilm_onnx.weights_for(minilm_onnx.cpu_flags())
    assert getattr(build_embedder("minilm"), "weights", None) == on_this_cpu
    for weights in ("float", "int8"):
        settings.MEMORYHUB_MINILM_WEIGHTS = weights
        assert getattr(build_embedder("minilm"), "weights", None) == weights


X86_AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma bmi2\nbugs\t\t: sysret_ss_attrs\n"
X86_AVX = "processor\t: 0\nflags\t\t: fpu sse2 sse4_2 avx\n"
X86_VNNI = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni\n\nprocessor\t: 1\nflags\t\t: fpu avx2 avx512f avx512_vnni\n"
ARM_DOTPROD = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32 atomics asimddp\nCPU part\t: 0xd0c\n"
ARM_OLD = "processor\t: 0\nFeatures\t: fp asimd evtstrm crc32\n"


@pytest.mark.parametrize(("cpuinfo", "weights", "signed"), [
    (X86_AVX2, "int8", False), (X86_VNNI, "int8", True), (ARM_DOTPROD, "int8", True), (X86_AVX, "float", False),
    (ARM_OLD, "float", False), ("", "float", False)])
def test_auto_weights_are_int8_where_measured_cheaper_and_signed_only_with_int8_dot_products(
        tmp_path, cpuinfo, weights, signed) -> None:
    """On an AVX2-only CPU int8 on unsigned weights took a request's embedding from 8.24 to 6.18 ms; signed
    weights saturated its kernels (docs/benchmarks.md, "int8 weights on a CPU without VNNI")."""
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    assert minilm_onnx.weights_for(minilm_onnx.cpu_flags(path)) == weights
    assert minilm_onnx.signed_weights_for(minilm_onnx.cpu_flags(path)) is signed
    assert minilm_onnx.cpu_flags(tmp_path / "absent") == frozenset()


def test_auto_weights_resolve_when_the_embedder_is_built() -> None:
    auto = MiniLMEmbedder(runtime="onnx", weights="auto")
    assert auto.weights == minilm_onnx.weights_for(minilm_onnx.cpu_flags())
    assert MiniLMEmbedder(runtime="numpy", weights="auto").weights == "float"


def test_health_says_which_weights_this_process_runs(settings, client) -> None:
    """``auto`` depends on the CPU: /health names the runtime and the weights it chose."""
    from banks.providers import embeddings

    settings.MEMORYHUB_EMBEDDINGS = "minilm"
    embeddings._cached.cache_clear()
    try:
        health = client.get("/health").json()["embeddings"]
        assert (health["model"], health["runtime"]) == ("all-MiniLM-L6-v2", "onnx")
        assert health["weights"] == minilm_onnx.weights_for(minilm_onnx.cpu_flags())
        settings.MEMORYHUB_EMBEDDINGS = "hashing"
        assert "weights" not in client.get("/health").json()["embeddings"]
    finally:
        embeddings._cached.cache_clear()


def test_blas_threads_are_limited_for_the_numpy_model_only(monkeypatch) -> None:
    limited: list[str] = []

    class Controller:
        def __init__(self, runtime: str) -> None:
            self.runtime = runtime

        def limit(self, limits, user_api):  # noqa: ANN001, ANN202
            import contextlib

            limited.append(self.runtime)
            assert (limits, user_api) == (1, "blas")
            return contextlib.nullcontext()

    for runtime in ("numpy", "onnx"):
        model = MiniLMEmbedder(runtime=runtime, threads=1)
        model._blas = Controller(runtime)
        model.embed_one("The heron waded at dawn.")
    # ONNX Runtime calls no BLAS (its own threads are set on its session): nothing to ask each call.
    assert limited == ["numpy"]
