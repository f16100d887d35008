"""Language-model providers: ``extractive`` (default, no model) or an OpenAI-compatible chat endpoint."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Protocol

from django.conf import settings

from banks.providers.base import ProviderError, post_json
from banks.providers.extractive import ExtractiveLanguageModel
from banks.providers.llm_types import Answer, Coverage, ExtractedEntity, ExtractedFact, Gap, Passage


class LanguageModel(Protocol):
    name: str

    def answer(self, query: str, passages: list[Passage], *, max_chars: int | None = None) -> Answer: ...
    def extract_entities(self, text: str) -> list[ExtractedEntity]: ...
    def extract_facts(self, user_message: str, assistant_message: str = "") -> list[ExtractedFact]: ...
    def summarize(self, texts: list[str], *, title: str = "") -> str: ...
    def judge_coverage(self, scope: str, texts: list[str]) -> Coverage: ...


class OpenAICompatibleLanguageModel:
    """Any /chat/completions endpoint. Each call asks for one JSON object and validates it."""

    def __init__(self, model: str, *, url: str, api_key: str, timeout: float) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.url = url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.timeout = timeout

    def _json(self, system: str, user: str) -> dict[str, Any]:
        body = post_json(
            self.name,
            self.url,
            {
                "model": self.model,
                "temperature": 0,
                "response_format": {"type": "json_object"},
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            },
            api_key=self.api_key,
            timeout=self.timeout,
        )
        try:
            content = body["choices"][0]["message"]["content"]
            parsed = json.loads(content)
        except (KeyError, IndexError, TypeError, ValueError):
            raise ProviderError(self.name, f"{self.name} answered without a JSON message") from None
        if not isinstance(parsed, dict):
            raise ProviderError(self.name, f"{self.name} answered JSON that is not an object")
        return parsed

    def answer(self, query: str, passages: list[Passage], *, max_chars: int | None = None) -> Answer:
        listing = "\n".join(f"[{p.memory_id}] {p.text}" for p in passages)
        data = self._json(
            "Answer the question only from the numbered memories. Reply as JSON: "
            '{"answer": str, "cited_ids": [memory ids used], "confidence": number 0..1}.',
            f"Question: {query}\n\nMemories:\n{listing}",
        )
        known = {p.memory_id for p in passages}
        cited = [str(i) for i in data.get("cited_ids", []) if str(i) in known]
        confidence = data.get("confidence")
        return Answer(
            text=str(data.get("answer", ""))[: max_chars or None],
            cited_ids=cited,
            confidence=float(confidence) if isinstance(confidence, int | float) else None,
        )

    def extract_entities(self, text: str) -> list[ExtractedEntity]:
        data = self._json(
            'List the named entities in the text as JSON: {"entities": [{"name": str, "entity_type": '
            '"PERSON"|"ORG"|"PLACE"|"PROJECT"|"OTHER"}]}.',
            text,
        )
        return [
            ExtractedEntity(name=str(e["name"]), entity_type=str(e.get("entity_type", "OTHER")))
            for e in data.get("entities", [])
            if isinstance(e, dict) and e.get("name")
        ]

    def extract_facts(self, user_message: str, assistant_message: str = "") -> list[ExtractedFact]:
        data = self._json(
            "Extract durable facts worth remembering about the user from this conversation turn. Reply as "
            'JSON: {"facts": [{"text": str, "category": str, "importance": number 0..1}]}.',
            f"User: {user_message}\nAssistant: {assistant_message}",
        )
        facts = []
        for item in data.get("facts", []):
            if isinstance(item, dict) and item.get("text"):
                importance = item.get("importance", 0.5)
                facts.append(ExtractedFact(
                    text=str(item["text"]),
                    category=str(item.get("category", "fact")),
                    importance=float(importance) if isinstance(importance, int | float) else 0.5,
                ))
        return facts

    def summarize(self, texts: list[str], *, title: str = "") -> str:
        data = self._json(
            'Summarise these memories as markdown bullet points. Reply as JSON: {"summary": str}.',
            f"Topic: {title}\n\n" + "\n".join(f"- {t}" for t in texts),
        )
        return str(data.get("summary", ""))

    def expand_query(self, query: str) -> list[str]:
        """Words and short phrases a memory answering ``query`` may use instead of the question's own."""
        data = self._json(
            "A search engine looks for stored memories (notes, conversation turns) that answer the question. "
            "List up to 8 extra search terms the answer may use but the question does not: synonyms, related "
            'words, names, likely phrasings. Reply as JSON: {"terms": [str]}.',
            query,
        )
        terms = data.get("terms")
        return [str(t) for t in terms if isinstance(t, str | int | float)] if isinstance(terms, list) else []

    def judge_coverage(self, scope: str, texts: list[str]) -> Coverage:
        data = self._json(
            "Judge how well the memories cover the stated purpose. Reply as JSON: "
            '{"coverage_score": number 0..1, "gaps": [{"topic": str, "severity": "high"|"medium"|"low", '
            '"reason": str}]}.',
            f"Purpose: {scope}\n\n" + "\n".join(f"- {t}" for t in texts),
        )
        gaps = [
            Gap(topic=str(g.get("topic", "")), severity=str(g.get("severity")) if g.get("severity") in
                {"high", "medium", "low"} else "medium", reason=str(g.get("reason", "")))
            for g in data.get("gaps", [])
            if isinstance(g, dict)
        ]
        score = data.get("coverage_score", 0.0)
        return Coverage(score=float(score) if isinstance(score, int | float) else 0.0, gaps=gaps)


def build_llm(spec: str) -> LanguageModel:
    kind, _, arg = spec.partition(":")
    if kind == "extractive":
        return ExtractiveLanguageModel()
    if kind in {"openai", "http"}:
        return OpenAICompatibleLanguageModel(
            arg or "gpt-4o-mini",
            url=settings.MEMORYHUB_LLM_URL,
            api_key=settings.MEMORYHUB_LLM_API_KEY,
            timeout=settings.MEMORYHUB_PROVIDER_TIMEOUT,
        )
    raise ProviderError(spec, f"Unknown language model provider {spec!r}; use extractive or openai:<model>")


def extraction_is_remote(llm: LanguageModel) -> bool:
    """Whether ``llm.extract_entities`` calls another service (a chat model: seconds, and paid for) rather
    than running here in microseconds (``extractive``). Any model this module does not know counts as remote."""
    return not isinstance(llm, ExtractiveLanguageModel)


@lru_cache(maxsize=8)
def _cached(spec: str, url: str, timeout: float) -> LanguageModel:
    return build_llm(spec)


def get_llm(spec: str | None = None) -> LanguageModel:
    spec = spec or settings.MEMORYHUB_LLM
    return _cached(spec, settings.MEMORYHUB_LLM_URL, settings.MEMORYHUB_PROVIDER_TIMEOUT)
