"""A chat import embeds each turn once, with its context: the importer computes the contexts a batch's
turns will have (from the turns before them in the archive and in the bank) before their vectors are
made, so the context refresh that follows the insert finds them current and embeds nothing again."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from banks.models import Bank, Memory
from banks.providers import bank_embedder
from banks.providers.embeddings import cosine
from banks.turn_context import embedding_text
from portability.formats.registry import open_archive
from portability.services import archive_import

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

# Real commits: a second embedding would come after the commit.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text any bank's embedder is asked for."""
    calls: list[str] = []
    cls = type(bank_embedder(Bank.objects.get_or_create(bank_id="probe")[0]))
    real = cls.embed

    def counting(self: Any, texts: list[str], *args: Any, **kwargs: Any) -> Any:
        calls.extend(texts)
        return real(self, texts, *args, **kwargs)

    monkeypatch.setattr(cls, "embed", counting)
    return calls


def _agentos(path: Path) -> Path:
    """An AgentOS export holding one conversation of three exchanges."""
    lines = ["My bike's chain snapped on the way to work.", "It's fixed: Tomasz at the corner shop did it.",
             "He says to oil it monthly."]
    messages = [{"id": f"msg_{i}_{role}", "conversation_id": "cv_1", "role": role, "metadata": "{}",
                 "content": text if role == "user" else "Noted.", "created_at": 1773900120000 + 1000 * (2 * i + j)}
                for i, text in enumerate(lines) for j, role in enumerate(("user", "assistant"))]
    path.write_text(json.dumps({"meta": {"schema_version": "2"}, "traces": [], "nodes": [], "edges": [],
                                "conversations": [{"id": "cv_1", "title": "Bike", "created_at": 1773900120000}],
                                "messages": messages}))
    return path


def _import(bank: Bank, name: str | Path, batch_size: int = 2) -> None:
    _, _, records = open_archive(FIXTURES / name)
    report = archive_import(bank=bank, records=records, actor="test", extract_entities=False, batch_size=batch_size)
    assert report.imported and not report.invalid, report


@pytest.mark.parametrize(("name", "sessions"), [("chatgpt_conversations.json", 2), ("agentos", 1)])
def test_every_imported_turn_is_embedded_once_with_its_context(make_bank, embedded, tmp_path: Path, name: str,
                                                               sessions: int) -> None:
    # Small batches: a session's turns span batches, whose contexts need the batch before.
    bank = make_bank("chat-once", config={"recall": {"context_turns": 2}})
    embedded.clear()
    _import(bank, name if name != "agentos" else _agentos(tmp_path / "agentos.json"))
    turns = list(Memory.objects.filter(bank=bank, session_key__isnull=False).order_by("created_at", "id"))
    assert len({t.session_key for t in turns}) == sessions and all(t.context for t in turns)
    wanted = [embedding_text(t.text, t.context) for t in turns]
    assert sorted(t for t in embedded if t in set(wanted)) == sorted(wanted)  # once each
    assert len(embedded) == Memory.objects.filter(bank=bank).count()  # and nothing else twice
    vectors = bank_embedder(bank).embed(wanted)
    for memory, vector in zip(turns, vectors, strict=True):
        assert cosine(list(memory.embedding or []), vector) > 0.9999


def test_an_import_continuing_stored_sessions_embeds_each_turn_once(make_bank, embedded) -> None:
    bank = make_bank("chat-again", config={"recall": {"context_turns": 1}})
    _import(bank, "chatgpt_conversations.json")
    first = {m.pk for m in Memory.objects.filter(bank=bank)}
    # The same conversations again, under new ids and words: they follow the stored turns of each session.
    _, _, records = open_archive(FIXTURES / "chatgpt_conversations.json")

    def later() -> Any:
        for record in records():
            if hasattr(record, "text"):
                record.memory_id, record.text = None, record.text + " (again)"
                for name in ("created_at", "occurred_at"):
                    if (when := getattr(record, name)) is not None:
                        setattr(record, name, when + timedelta(days=365))
            yield record

    embedded.clear()
    archive_import(bank=bank, records=later, actor="test", extract_entities=False, batch_size=2)
    new = list(Memory.objects.filter(bank=bank).exclude(pk__in=first).order_by("created_at", "id"))
    assert new and all(m.context and "\n" in m.context for m in new)  # each follows a stored turn
    assert len(embedded) == len(new)
    assert sorted(embedded) == sorted(embedding_text(m.text, m.context) for m in new)
