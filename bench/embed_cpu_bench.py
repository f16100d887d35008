"""MiniLM's CPU per text on ONNX Runtime, float against int8 weights, and how far apart their vectors are.

    .venv/bin/python bench/embed_cpu_bench.py
    .venv/bin/python bench/embed_cpu_bench.py --option session.intra_op.allow_spinning=0 --option arena=0
    .venv/bin/python bench/embed_cpu_bench.py --previous main --variant kept_float=4,smooth=0

Each variant is one ONNX Runtime session of one intra-op thread, as a web worker runs it
(banks.providers.minilm_onnx). The CPU time is the calling thread's (``time.thread_time``), for a
question of six word pieces (three words, as bench/load_bench.py asks) and a retain of 52, in
interleaved rounds (every variant once per round, the best round kept), so neighbours on a shared
machine weigh on every variant alike. The vectors are compared over the committed recall data's
questions and turns (cosine to the float graph's, min / 1st percentile / mean). ``--option``
adds a float session with one more setting: ``arena=0``, ``pattern=0`` (the memory arena and pattern
planner), ``level=basic|extended`` (graph optimisation) or any session config entry ``KEY=VALUE``.
``--variant`` adds an int8 graph written with other arguments (``kept_float=4,smooth=0``; ``signed=1`` or
``signed=0`` for the other layout of the weights than this CPU's: see minilm_onnx.build_model), and ``--previous REF`` the int8 graph as the module at git revision REF wrote
it, so a change to the graph is timed against the one before it in the same rounds. Needs no database.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from banks.providers import minilm_onnx  # noqa: E402
from banks.providers.minilm import MAX_TOKENS, bundled_model_dir  # noqa: E402

QUESTION = "billing refund region"  # 6 pieces with [CLS] and [SEP]
RETAIN = ("Priya approved the invoice latency for the webhook quota, with storage and release noted on 14 June. "
          "Also budget ticket owner pager migration deploy partner firewall. Then Omar rejected the signup survey for the trial vendor team.")
FIXTURES = ("recall_sample.json", "recall_invented.json", "recall_multihop_invented.json")


def session(model: bytes, option: str | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    if option:
        key, _, value = option.partition("=")
        if key == "arena":
            options.enable_cpu_mem_arena = value != "0"
        elif key == "pattern":
            options.enable_mem_pattern = value != "0"
        elif key == "level":
            options.graph_optimization_level = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                                "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}[value]
        else:
            options.add_session_config_entry(key, value)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=minilm_onnx.NO_FUSION)


def previous_graph(ref: str, model_dir: Path) -> bytes:
    """The int8 graph as banks/providers/minilm_onnx.py at git revision ``ref`` writes it."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:banks/providers/minilm_onnx.py"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"minilm_onnx_{ref}")
    # Its kept activations are read beside this checkout's module (the file itself is not versioned by ref).
    module.__file__ = str(REPO / "banks" / "providers" / "minilm_onnx.py")
    exec(compile(source, f"{ref}:minilm_onnx.py", "exec"), module.__dict__)  # noqa: S102 (this repository's own file)
    return module.build_model(model_dir, "int8")


def variant(spec: str) -> dict[str, Any]:
    """``kept_float=4,smooth=0,signed=1`` as build_model's keyword arguments."""
    kwargs: dict[str, Any] = {}
    for item in spec.split(","):
        key, _, value = item.partition("=")
        kwargs[key] = int(value) if key == "kept_float" else value not in {"0", "false", "no"}
    return kwargs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=60, help="calls per text, variant and round")
    parser.add_argument("--option", action="append", default=[], help="a float session with this setting too")
    parser.add_argument("--variant", action="append", default=[], help="an int8 graph with these build arguments")
    parser.add_argument("--previous", action="append", default=[], help="the int8 graph at this git revision")
    args = parser.parse_args()
    from tokenizers import Tokenizer

    model_dir = bundled_model_dir()
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    graphs = {weights: minilm_onnx.build_model(model_dir, weights) for weights in minilm_onnx.WEIGHTS}
    sessions = {"float": session(graphs["float"], None), "int8": session(graphs["int8"], None)}
    sessions.update({f"float, {option}": session(graphs["float"], option) for option in args.option})
    sessions.update({f"int8, {spec}": session(minilm_onnx.build_model(model_dir, "int8", **variant(spec)), None)
                     for spec in args.variant})
    sessions.update({f"int8 at {ref}": session(previous_graph(ref, model_dir), None) for ref in args.previous})

    def encode(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encodings = tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids, mask = np.zeros((len(texts), width), np.int64), np.zeros((len(texts), width), np.float32)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)], mask[row, :len(e.ids)] = e.ids, 1.0
        return ids, mask

    def run(name: str, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        pooled = sessions[name].run(["pooled"], {"ids": ids, "mask": mask,
                                                 "positions": np.arange(ids.shape[1], dtype=np.int64)})[0]
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    texts: list[str] = []
    for name in FIXTURES:
        for instance in json.loads((REPO / "tests" / "fixtures" / name).read_text()):
            texts.append(instance["question"])
            texts += [turn["content"] for session_turns in instance["haystack_sessions"] for turn in session_turns]
    texts = sorted(set(texts), key=len)  # batches of like lengths, as the embedder pads them
    vectors = {name: np.vstack([run(name, *encode(texts[i:i + 16])) for i in range(0, len(texts), 16)])
               for name in sessions}
    print(f"cosine to the float vectors over {len(texts)} texts of the committed recall data:")
    for name in sessions:
        cosines = (vectors["float"] * vectors[name]).sum(axis=1)
        print(f"  {name}: min {cosines.min():.5f}  1st percentile {np.percentile(cosines, 1):.5f}  "
              f"mean {cosines.mean():.5f}")
    for ref in args.previous:  # what a bank's vectors written by that graph are to the new ones
        cosines = (vectors["int8"] * vectors[f"int8 at {ref}"]).sum(axis=1)
        print(f"  int8 against int8 at {ref}: min {cosines.min():.5f}  1st percentile {np.percentile(cosines, 1):.5f}  "
              f"mean {cosines.mean():.5f}")
    inputs = [encode([QUESTION]), encode([RETAIN])]
    best = {name: [float("inf")] * len(inputs) for name in sessions}
    for _ in range(args.rounds):
        for name in sessions:
            for k, (ids, mask) in enumerate(inputs):
                run(name, ids, mask)
                started = time.thread_time()
                for _ in range(args.calls):
                    run(name, ids, mask)
                best[name][k] = min(best[name][k], (time.thread_time() - started) / args.calls * 1000)
    pieces = [ids.shape[1] for ids, _ in inputs]
    print(f"\nthread CPU per call, best of {args.rounds} interleaved rounds of {args.calls}:")
    for name, (question, retain) in best.items():
        print(f"  {name}: {pieces[0]}-piece question {question:.2f} ms, {pieces[1]}-piece retain {retain:.2f} ms, "
              f"70/30 {0.7 * question + 0.3 * retain:.2f} ms a request")


if __name__ == "__main__":
    main()
