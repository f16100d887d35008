"""Recall quality on conversational memories with labelled evidence (pure: data and metrics).

The data is LongMemEval's format (Wu et al., 2024, MIT): per question, the chat sessions of
its history with their dates, each turn ``{"role", "content", "has_answer"}``, and the
question with its type and date. Every turn becomes one memory that occurred at its session's
date; a question's evidence is the memories of its ``has_answer`` turns. Questions of many
instances share one bank, so each question is asked against everyone's history.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})(?:\s+\(\w+\))?\s*(\d{2}):(\d{2})")


def parse_date(value: str) -> datetime:
    """LongMemEval's ``2023/05/20 (Sat) 02:21`` (UTC assumed)."""
    match = _DATE.search(value)
    if not match:
        raise ValueError(f"unreadable date {value!r}")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


@dataclass
class Turn:
    key: str  # session id + index: stable across runs
    text: str
    role: str
    occurred_at: datetime
    session_id: str


@dataclass
class Question:
    question_id: str
    category: str
    text: str
    asked_at: datetime
    evidence: set[str] = field(default_factory=set)  # turn keys


@dataclass
class Corpus:
    turns: dict[str, Turn]
    questions: list[Question]


def load_instances(source: Path) -> list[dict[str, Any]]:
    """A directory of one-instance JSON files, or one JSON file holding a list of instances."""
    if source.is_dir():
        rows = []
        for path in sorted(source.glob("*.json")):
            try:
                rows.append(json.loads(path.read_text()))
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
        return rows
    data = json.loads(source.read_text())
    return data if isinstance(data, list) else [data]


def build_corpus(instances: list[dict[str, Any]], *, questions: int | None = None, seed: int = 7,
                 max_sessions: int = 4, max_chars: int | None = None) -> Corpus:
    """Pool the sessions of up to ``questions`` instances (drawn evenly per category) into one corpus."""
    by_id: dict[str, dict[str, Any]] = {}
    for row in instances:
        sessions = row.get("haystack_sessions") or []
        has_evidence = any(t.get("has_answer") for s in sessions for t in s)
        if has_evidence and len(sessions) <= max_sessions and not str(row["question_id"]).endswith("_abs"):
            by_id.setdefault(str(row["question_id"]), row)
    chosen = sorted(by_id.values(), key=lambda r: str(r["question_id"]))
    if questions is not None and questions < len(chosen):
        rng = random.Random(seed)
        per_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in chosen:
            per_category[row["question_type"]].append(row)
        for rows in per_category.values():
            rng.shuffle(rows)
        picked: list[dict[str, Any]] = []
        while len(picked) < questions:
            for category in sorted(per_category):
                if per_category[category] and len(picked) < questions:
                    picked.append(per_category[category].pop())
        chosen = picked
    turns: dict[str, Turn] = {}
    out: list[Question] = []
    for row in chosen:
        question = Question(question_id=str(row["question_id"]), category=row["question_type"],
                            text=row["question"], asked_at=parse_date(row["question_date"]))
        for session_id, date, session in zip(row["haystack_session_ids"], row["haystack_dates"],
                                             row["haystack_sessions"], strict=False):
            for index, turn in enumerate(session):
                text = (turn.get("content") or "").strip()
                if not text:
                    continue
                key = f"{session_id}:{index}"
                turns.setdefault(key, Turn(key=key, text=text[:max_chars] if max_chars else text,
                                           role=turn.get("role", "user"), occurred_at=parse_date(date),
                                           session_id=session_id))
                if turn.get("has_answer"):
                    question.evidence.add(key)
        if question.evidence:
            out.append(question)
    return Corpus(turns=turns, questions=out)


def metrics(ranked: list[str], evidence: set[str]) -> dict[str, float]:
    """recall@5, recall@10, MRR and nDCG@10 of one ranked list against its evidence."""
    def recall_at(k: int) -> float:
        return len(set(ranked[:k]) & evidence) / len(evidence)

    rr = next((1.0 / i for i, key in enumerate(ranked, start=1) if key in evidence), 0.0)
    dcg = sum(1.0 / math.log2(i + 1) for i, key in enumerate(ranked[:10], start=1) if key in evidence)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(evidence), 10) + 1))
    return {"r@5": recall_at(5), "r@10": recall_at(10), "mrr": rr, "ndcg": dcg / ideal if ideal else 0.0}


def summarise(rows: list[tuple[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean of each metric per category and overall (``all``); ``n`` is the question count."""
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for category, values in rows:
        groups[category].append(values)
        groups["all"].append(values)
    return {cat: {**{m: sum(v[m] for v in vals) / len(vals) for m in vals[0]}, "n": float(len(vals))}
            for cat, vals in groups.items()}


_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


class PlainBM25:
    """The textbook Okapi BM25 (k1 = 1.2, b = 0.75) over lower-cased words: the baseline to beat."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.keys = list(docs)
        self.tf: list[defaultdict[str, int]] = [defaultdict(int) for _ in self.keys]
        self.df: dict[str, int] = defaultdict(int)
        self.lengths = []
        for i, key in enumerate(self.keys):
            words = tokens(docs[key])
            for word in words:
                self.tf[i][word] += 1
            for word in set(words):
                self.df[word] += 1
            self.lengths.append(len(words))
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)

    def rank(self, query: str, limit: int = 50) -> list[str]:
        n = len(self.keys)
        terms = set(tokens(query))
        scores = []
        for i in range(n):
            score = 0.0
            for term in terms:
                tf = self.tf[i].get(term, 0)
                if tf:
                    idf = math.log(1 + (n - self.df[term] + 0.5) / (self.df[term] + 0.5))
                    score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * self.lengths[i] / self.avg))
            if score > 0:
                scores.append((score, i))
        scores.sort(reverse=True)
        return [self.keys[i] for _, i in scores[:limit]]


def plain_rrf(lists: list[list[str]], k: int = 60) -> list[str]:
    scores: dict[str, float] = defaultdict(float)
    for ranked in lists:
        for rank, key in enumerate(ranked, start=1):
            scores[key] += 1.0 / (k + rank)
    return [key for key, _ in sorted(scores.items(), key=lambda kv: -kv[1])]
