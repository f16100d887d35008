"""Optional query expansion before the arms run: a language model adds the words a memory
answering the question may use ("car" for "vehicle", a product's name for "my phone").

Runs only when the bank turns it on (``config.recall.expand``) and ``MEMORYHUB_LLM`` names a
chat model; the terms feed the keyword arm (BM25 weighs each by its rarity, so a vague term costs
little). Answers are cached per model and question. A model that fails or is slower than
``MEMORYHUB_EXPAND_TIMEOUT`` is skipped: recall runs on the question alone and the trace says why.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache

from banks.providers.llm import OpenAICompatibleLanguageModel
from banks.recall_fusion import RecallConfig

logger = logging.getLogger(__name__)
MAX_TERMS = 8
MAX_TERM_CHARS = 60
CACHE_SECONDS = 600
_WORD = re.compile(r"\w+", re.UNICODE)


def clean_terms(query: str, terms: list[str]) -> list[str]:
    """At most MAX_TERMS short, distinct terms that add a word the question does not already have."""
    have = {w.lower() for w in _WORD.findall(query)}
    kept: list[str] = []
    for raw in terms:
        term = " ".join(raw.split())[:MAX_TERM_CHARS]
        words = {w.lower() for w in _WORD.findall(term)}
        if not words or words <= have:
            continue
        kept.append(term)
        have |= words
        if len(kept) == MAX_TERMS:
            break
    return kept


def _expander() -> OpenAICompatibleLanguageModel | None:
    kind, _, model = settings.MEMORYHUB_LLM.partition(":")
    if kind not in {"openai", "http"}:
        return None
    return OpenAICompatibleLanguageModel(model or "gpt-4o-mini", url=settings.MEMORYHUB_LLM_URL,
                                         api_key=settings.MEMORYHUB_LLM_API_KEY,
                                         timeout=settings.MEMORYHUB_EXPAND_TIMEOUT)


def expand_stage(query: str, config: RecallConfig, note: dict[str, Any]) -> str:
    """The question the keyword arm should search (the question plus any added terms); ``note`` gets the trace."""
    if not config.expand:
        return query
    model = _expander()
    if model is None:
        note.update(status="skipped", note="no language model configured (MEMORYHUB_LLM=extractive)")
        return query
    key = "recall:expand:" + hashlib.sha256(f"{model.name}\n{query}".encode()).hexdigest()
    started = time.perf_counter()
    terms = cache.get(key)
    cached = terms is not None
    if terms is None:
        try:
            terms = clean_terms(query, model.expand_query(query))
        except Exception as exc:  # whatever the model does, recall still answers (on the question alone)
            logger.warning("query expansion skipped: %s", exc)
            note.update(provider=model.name, status="failed", terms=[],
                        latency_ms=round((time.perf_counter() - started) * 1000, 3),
                        note=f"{exc.__class__.__name__}: {exc}; searched the question alone")
            return query
        cache.set(key, terms, CACHE_SECONDS)
    note.update(provider=model.name, status="ok", terms=terms, cached=cached,
                latency_ms=round((time.perf_counter() - started) * 1000, 3))
    return " ".join([query, *terms])
