"""Writes banks/providers/minilm_activations.npz: the largest |activation| of every input channel of
MiniLM's 24 matrix products, over the committed recall data's questions and turns, from which the int8
graph smooths its products' inputs (banks.providers.minilm_onnx, SmoothQuant).

    .venv/bin/python bench/minilm_activations.py

Each text runs alone through the float graph (no padding to count), on ONNX Runtime. Run it again only
if the model's weights change; the graph's GRAPH_VERSION must then be bumped. Needs no database.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from banks.providers import minilm_onnx  # noqa: E402
from banks.providers.minilm import MAX_TOKENS, bundled_model_dir  # noqa: E402

FIXTURES = ("recall_sample.json", "recall_invented.json", "recall_multihop_invented.json")


def main() -> None:
    import onnx
    import onnxruntime as ort
    from tokenizers import Tokenizer

    model_dir = bundled_model_dir()
    layers = int(json.loads((model_dir / "config.json").read_text())["num_hidden_layers"])
    names = minilm_onnx.product_inputs(layers)
    model = onnx.load_from_string(minilm_onnx.build_model(model_dir, "float", smooth=False))
    tensors = sorted(set(names.values()))
    model.graph.output.extend(onnx.helper.make_tensor_value_info(t, onnx.TensorProto.FLOAT, None) for t in tensors)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=minilm_onnx.NO_FUSION)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    texts: set[str] = set()
    for name in FIXTURES:
        for instance in json.loads((REPO / "tests" / "fixtures" / name).read_text()):
            texts.add(instance["question"])
            texts.update(turn["content"] for turns in instance["haystack_sessions"] for turn in turns)
    largest: dict[str, np.ndarray] = {}
    for text in sorted(texts):
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"ids": ids, "mask": np.ones(ids.shape, np.float32), "positions": np.arange(ids.shape[1])}
        for tensor, value in zip(tensors, session.run(tensors, feed), strict=True):
            seen = np.abs(value.reshape(-1, value.shape[-1])).max(axis=0)
            largest[tensor] = np.maximum(largest[tensor], seen) if tensor in largest else seen
    # float16 holds these maxima (0.1 to 30) to 3 digits, which is all a smoothing factor needs.
    arrays: dict[str, Any] = {product: largest[tensor].astype(np.float16) for product, tensor in names.items()}
    np.savez_compressed(minilm_onnx.ACTIVATIONS, **arrays)
    print(f"{minilm_onnx.ACTIVATIONS.relative_to(REPO)}: {len(names)} products over {len(texts)} texts")


if __name__ == "__main__":
    main()
