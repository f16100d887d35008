from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Passage:
    memory_id: str
    text: str
    score: float = 0.0


@dataclass
class Answer:
    text: str
    cited_ids: list[str] = field(default_factory=list)
    confidence: float | None = None


@dataclass
class ExtractedEntity:
    name: str
    entity_type: str = "OTHER"


@dataclass
class ExtractedFact:
    text: str
    category: str = "fact"
    importance: float = 0.5


@dataclass
class Gap:
    topic: str
    severity: str
    reason: str


@dataclass
class Coverage:
    score: float
    gaps: list[Gap] = field(default_factory=list)
