"""Recall quality on long multi-session conversations with labelled evidence, stage by stage.

    .venv/bin/python bench/recall_quality.py                       # the committed data (below)
    .venv/bin/python bench/recall_quality.py --data DIR --questions 120 --embedders minilm,hashing
    MEMORYHUB_RERANK=http MEMORYHUB_RERANK_URL=... .venv/bin/python bench/recall_quality.py --stages

The committed data: ``tests/fixtures/recall_sample.json`` (18 LongMemEval questions),
``tests/fixtures/recall_invented.json`` (20 questions over conversations invented for this project:
short replies that need the turn before them, questions joining two facts, "when" questions) and
``tests/fixtures/recall_multihop_invented.json`` (10 harder two-fact questions, also invented: the
second fact shares none of the question's words, only a person's name with the first ("entity join")
or its place in the session ("session join"), among turns that share the question's words), pooled
into one bank; the invented kinds are shown as "invented <kind>". DIR holds LongMemEval instances (one
JSON file each, or one JSON list) and replaces the sample. Every turn is stored as one memory that
occurred at its session date, in its session (``metadata.session_id``), in two banks per embedder:
one indexing every turn with its context (banks.turn_context, the default) and one without; every
question is asked against the whole bank with its own date as the reference.

Prints recall@5/@10, MRR and nDCG@10 overall and recall@10 per question kind, with p50/p95 latency
(taken in this process: on a shared machine, not representative), for each arm alone and the fused
hybrid on both banks, the hybrid without its multi-hop stage, and the textbook baselines computed
here in Python (BM25, cosine on the same vectors, and their plain RRF). Uses its own database under
var/bench. ``--stages`` adds "hybrid + rerank" (the reranker MEMORYHUB_RERANK names) and "hybrid +
expansion" (the chat model MEMORYHUB_LLM names) when they are configured.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("MEMORYHUB_VAR_DIR", str(REPO / "var" / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402
from django.conf import settings as _settings  # noqa: E402

from memoryhub.embedded import prepare_local_install  # noqa: E402

prepare_local_install(_settings)  # the local install's folders, key and server, as manage.py does
django.setup()

import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402

from banks.models import Bank, Memory  # noqa: E402
from banks.recall_eval import (  # noqa: E402
    Corpus,
    PlainBM25,
    build_corpus,
    load_instances,
    metrics,
    plain_rrf,
    summarise,
)
from banks.recall_fusion import RecallConfig  # noqa: E402
from banks.selectors.recall import RecallFilters, query_vector, recall_memories  # noqa: E402
from bench.quality_banks import build_bank  # noqa: E402

SAMPLE = REPO / "tests" / "fixtures" / "recall_sample.json"
INVENTED = REPO / "tests" / "fixtures" / "recall_invented.json"
MULTIHOP = REPO / "tests" / "fixtures" / "recall_multihop_invented.json"
ALONE = {"time_aware": False, "multi_hop": False}
CONFIGS: dict[str, dict[str, Any]] = {
    "semantic": {"arms": ["semantic"], **ALONE},
    "keyword (BM25)": {"arms": ["keyword"], **ALONE},
    "graph": {"arms": ["graph"], **ALONE},
    "hybrid (default: context + multi-hop)": {},
    "hybrid + context, entity hop only": {"weights": {"session": 0.0}},
    "hybrid + context, session hop only": {"weights": {"hop": 0.0}},
    "hybrid + context, no multi-hop": {"multi_hop": False},
}
# On the bank without contexts: what the context stage adds, arm by arm.
PLAIN_CONFIGS: dict[str, dict[str, Any]] = {
    "semantic, no context": {"arms": ["semantic"], **ALONE},
    "keyword (BM25), no context": {"arms": ["keyword"], **ALONE},
    "hybrid + multi-hop, no context": {},
    "hybrid, no context, no multi-hop (before)": {"multi_hop": False},
}
# Stages whose in-process milliseconds (the trace's strategy_timings_ms) the overall table shows.
STAGES = ("keyword", "hops")


def committed_corpus() -> Corpus:
    """The LongMemEval sample and the invented conversations, pooled (their kinds kept apart)."""
    sample = build_corpus(load_instances(SAMPLE))
    invented = build_corpus(load_instances(INVENTED), max_sessions=50)
    hard = build_corpus(load_instances(MULTIHOP), max_sessions=50)
    for question in invented.questions + hard.questions:
        question.category = f"invented {question.category}"
    return Corpus(turns={**sample.turns, **invented.turns, **hard.turns},
                  questions=sample.questions + invented.questions + hard.questions)


Result = tuple[dict, list[float] | None, dict[str, list[float]]]


def run_config(bank: Bank, corpus: Corpus, settings: dict, clear: bool = True) -> Result:
    config = RecallConfig.from_settings(settings)
    if clear:
        query_vector.cache_clear()  # every configuration pays for embedding its questions
    rows, latencies = [], []
    stages: dict[str, list[float]] = {}
    for question in corpus.questions:
        started = time.perf_counter()
        hits, _, trace, _ = recall_memories(bank, question.text, max_results=10, config=config,
                                            filters=RecallFilters(reference_date=question.asked_at))
        latencies.append((time.perf_counter() - started) * 1000)
        for stage, ms in trace.strategy_timings_ms.items():
            stages.setdefault(stage, []).append(ms)
        rows.append((question.category, metrics([h.memory_id for h in hits], question.evidence)))
    return summarise(rows), latencies, stages


def run_baselines(bank: Bank, corpus: Corpus) -> dict[str, dict]:
    from banks.providers import bank_embedder

    keys, vectors = [], []
    for memory_id, vector in Memory.objects.filter(bank=bank).values_list("memory_id", "embedding"):
        keys.append(memory_id)
        vectors.append(np.asarray(vector, dtype=np.float32))
    matrix = np.vstack(vectors)
    bm25 = PlainBM25({k: corpus.turns[k].text for k in keys})
    embedder = bank_embedder(bank)
    # The cosine baseline ranks the bank's stored vectors (made with each turn's context, where it has one).
    out: dict[str, list] = {"plain BM25 (Python)": [], "plain cosine (Python)": [], "plain BM25+cosine RRF": []}
    for question in corpus.questions:
        query = np.asarray(embedder.embed([question.text])[0], dtype=np.float32)
        cosine = [keys[i] for i in np.argsort(-(matrix @ query))[:50]]
        lexical = bm25.rank(question.text, 50)
        for name, ranked in (("plain BM25 (Python)", lexical), ("plain cosine (Python)", cosine),
                             ("plain BM25+cosine RRF", plain_rrf([lexical, cosine]))):
            out[name].append((question.category, metrics(ranked[:10], question.evidence)))
    return {name: summarise(rows) for name, rows in out.items()}


def _ms(values: list[float] | None, q: float) -> str:
    return f"{np.percentile(values, q):.1f}" if values else "-"


def print_table(title: str, results: dict[str, Result]) -> None:
    """Overall figures per configuration, then recall@5 / recall@10 per question kind."""
    categories = sorted({c for summary, _, _ in results.values() for c in summary if c != "all"})
    print(f"\n### {title}\n")
    print("| configuration | r@5 | r@10 | MRR | nDCG@10 | p50 ms | p95 ms | " +
          " | ".join(f"{stage} p50 / p95 ms" for stage in STAGES) + " |")
    print("|---" * (7 + len(STAGES)) + "|")
    for name, (summary, latencies, stages) in results.items():
        overall = summary["all"]
        timings = " | ".join(f"{_ms(stages.get(stage), 50)} / {_ms(stages.get(stage), 95)}" for stage in STAGES)
        print(f"| {name} | {overall['r@5']:.3f} | {overall['r@10']:.3f} | {overall['mrr']:.3f} | "
              f"{overall['ndcg']:.3f} | {_ms(latencies, 50)} | {_ms(latencies, 95)} | {timings} |")
    print("\nrecall@5 / recall@10 per question kind (questions):\n")
    first = next(iter(results.values()))[0]
    print("| configuration | " + " | ".join(f"{c} ({int(first[c]['n'])})" if c in first else c
                                          for c in categories) + " |")
    print("|---" * (1 + len(categories)) + "|")
    for name, (summary, _, _) in results.items():
        cells = " | ".join(f"{summary[c]['r@5']:.2f} / {summary[c]['r@10']:.2f}" if c in summary else "-"
                           for c in categories)
        print(f"| {name} | {cells} |")


def sweep(bank: Bank, corpus: Corpus) -> None:
    """Fusion settings around the defaults, best first by recall@10 then nDCG."""
    rows = []
    for keyword in (1.0, 1.5):
        for graph in (0.0, 0.3):
            for temporal in (0.0, 0.5):
                for k in (20, 60):
                    settings = {"weights": {"semantic": 1.0, "keyword": keyword, "graph": graph,
                                            "temporal": temporal}, "rrf_k": k, "time_aware": temporal > 0}
                    summary, _, _ = run_config(bank, corpus, settings, clear=False)
                    rows.append((summary["all"]["r@10"], summary["all"]["ndcg"], settings))
    rows.sort(key=lambda r: (-r[0], -r[1]))
    print("\n| r@10 | nDCG@10 | settings |\n|---|---|---|")
    for r10, ndcg, settings in rows:
        print(f"| {r10:.3f} | {ndcg:.3f} | {settings} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None, help="LongMemEval instances (default: the committed data)")
    parser.add_argument("--questions", type=int, default=None, help="questions to draw (evenly per category)")
    parser.add_argument("--embedders", default="minilm")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sweep", action="store_true", help="also try a grid of fusion weights and RRF k")
    parser.add_argument("--stages", action="store_true",
                        help="also the optional rerank / expansion stages, where a provider is configured")
    args = parser.parse_args()
    configs = dict(CONFIGS)
    if args.stages:
        from django.conf import settings as django_settings

        from banks.providers.rerank import get_reranker

        if get_reranker() is not None:
            configs["hybrid + rerank"] = {"rerank": True}
        if django_settings.MEMORYHUB_LLM.partition(":")[0] in {"openai", "http"}:
            configs["hybrid + expansion"] = {"expand": True}
        print(f"stages measured: {[name for name in configs if '+' in name] or 'none configured'}")
    call_command("migrate", verbosity=0)
    corpus = committed_corpus() if args.data is None else \
        build_corpus(load_instances(args.data), questions=args.questions, seed=args.seed)
    digest = hashlib.sha1("".join(sorted(corpus.turns)).encode()).hexdigest()[:8]
    counts: dict[str, int] = {}
    for q in corpus.questions:
        counts[q.category] = counts.get(q.category, 0) + 1
    print(f"{len(corpus.turns)} memories, {len(corpus.questions)} questions: {counts}")
    for spec in [s for s in args.embedders.split(",") if s]:
        started = time.perf_counter()
        bank = build_bank(f"quality-{spec.replace(':', '-')}-{digest}", spec, corpus)
        plain = build_bank(f"quality-{spec.replace(':', '-')}-{digest}-plain", spec, corpus, context_turns=0)
        print(f"banks {bank.bank_id}, {plain.bank_id} ready in {time.perf_counter() - started:.0f} s")
        results: dict[str, Result] = {}
        for name, settings in configs.items():
            results[name] = run_config(bank, corpus, settings)
        for name, settings in PLAIN_CONFIGS.items():
            results[name] = run_config(plain, corpus, settings)
        for name, summary in run_baselines(bank, corpus).items():
            results[name] = (summary, None, {})
        print_table(f"embedder {spec}", results)
        if args.sweep:
            sweep(bank, corpus)


if __name__ == "__main__":
    main()
