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


def test_a_cache_folder_that_cannot_be_written_falls_back_to_memory(tmp_path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    embedder = MiniLMEmbedder(runtime="onnx", cache_dir=blocked / "models")
    assert len(embedder.embed_one("still embedded")) == 384


def test_the_graph_runs_bert_blocks_on_onnx_runtime_fused_kernels() -> None:
    """Attention, the residual layer norms and the GELU are ONNX Runtime's fused operators, one node each
    per layer (fewer passes over the activations: a question's CPU time fell by about a sixth)."""
    import onnx

    from banks.providers.minilm import bundled_model_dir

    graph = onnx.load_from_string(minilm_onnx.build_model(bundled_model_dir())).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("Attention") == 6 and ops.count("BiasGelu") == 6
    assert ops.count("SkipLayerNormalization") == 12
    assert "Softmax" not in ops and "Erf" not in ops


def test_int8_weights_stay_beside_the_float_vectors() -> None:
    """The opt-in int8 graph (MEMORYHUB_MINILM_WEIGHTS=int8): 8-bit weights in blocks of 32, every vector
    close enough to the float model's that a bank's stored float vectors and new int8 ones compare."""
    float_model, int8_model = MiniLMEmbedder(runtime="onnx"), MiniLMEmbedder(runtime="onnx", weights="int8")
    batch = int8_model.embed_array(TEXTS)
    alone = np.array([int8_model.embed_one(t) for t in TEXTS], dtype=np.float32)
    assert np.abs(batch - alone).max() < 1e-4  # padding and its mask change nothing
    cosines = (float_model.embed_array(TEXTS) * batch).sum(axis=1)
    assert cosines.min() > 0.998, cosines
    assert int8_model.name == float_model.name


def test_the_int8_graph_runs_every_matrix_product_on_8_bit_weights(tmp_path) -> None:
    import onnx

    from banks.providers.minilm import bundled_model_dir

    graph = onnx.load_from_string(minilm_onnx.build_model(bundled_model_dir(), "int8")).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulNBits") == 24 and ops.count("MultiHeadAttention") == 6
    assert "MatMul" not in ops and "Attention" not in ops
    # Kept in its own file beside the float graph's.
    MiniLMEmbedder(runtime="onnx", weights="int8", cache_dir=tmp_path).embed_one("x")
    MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path).embed_one("x")
    assert sorted(p.name.endswith("-int8.onnx") for p in tmp_path.glob("minilm-*.onnx")) == [False, True]


def test_without_onnx_runtime_int8_runs_the_float_weights_and_unknown_weights_are_refused() -> None:
    assert MiniLMEmbedder(runtime="numpy", weights="int8").weights == "float"
    assert MiniLMEmbedder(runtime="onnx", weights="int8").weights == "int8"
    with pytest.raises(ValueError):
        MiniLMEmbedder(runtime="onnx", weights="int4")


def test_the_server_builds_minilm_with_the_configured_weights(settings) -> None:
    from banks.providers.embeddings import build_embedder

    assert settings.MEMORYHUB_MINILM_WEIGHTS == "int8"  # the default (docs/benchmarks.md: quality, CPU)
    assert getattr(build_embedder("minilm"), "weights", None) == "int8"
    settings.MEMORYHUB_MINILM_WEIGHTS = "float"
    assert getattr(build_embedder("minilm"), "weights", None) == "float"
