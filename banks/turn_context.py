"""What a conversation turn is indexed with besides its own text (pure rules, no database).

A short reply ("Yes, last Tuesday!") means nothing alone: recall finds it by the turn before it. So a
memory that belongs to a session (``banks_memory.session_key``) is indexed, in the keyword arm and in
its vector, with a *context*: its speaker, its session's date and the tail of the turn(s) before it.
The memory's text stays what the client sent; the context is kept beside it (``context``) and shown
in the recall trace, never as the text.

A bank sets how many preceding turns make the context with ``config["recall"]["context_turns"]``
(default 1, at most MAX_TURNS; 0 turns the context off for the turns stored or refreshed after).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

DEFAULT_TURNS = 1
MAX_TURNS = 5
# The end of a preceding turn is what a reply answers: only its last characters are kept.
TAIL_CHARS = 300
_SPEAKER_KEYS = ("speaker", "role", "author", "name")


@dataclass(frozen=True)
class Turn:
    """One turn of a session as the context needs it."""

    pk: int
    text: str
    speaker: str | None
    when: datetime | None


def context_turns(bank_config: Mapping[str, Any] | None) -> int:
    """The bank's context window in turns (``config.recall.context_turns``); bad values give the default."""
    recall = (bank_config or {}).get("recall") or {}
    value = recall.get("context_turns", DEFAULT_TURNS) if isinstance(recall, Mapping) else DEFAULT_TURNS
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TURNS:
        return DEFAULT_TURNS
    return value


def check_context_turns(bank_config: Mapping[str, Any] | None) -> str | None:
    """What is wrong with the bank's ``context_turns`` (None when it is absent or fine)."""
    recall = (bank_config or {}).get("recall") or {}
    if not isinstance(recall, Mapping) or "context_turns" not in recall:
        return None
    value = recall["context_turns"]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TURNS:
        return f"context_turns must be a whole number from 0 to {MAX_TURNS}"
    return None


def speaker_of(metadata: Mapping[str, Any] | None, text: str = "") -> str | None:
    """Who said a turn: its metadata's ``speaker``/``role``/``author``/``name``, else a ``[role]:`` prefix."""
    for key in _SPEAKER_KEYS:
        value = (metadata or {}).get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:40]
    if text.startswith("[") and "]:" in text[:40]:
        return text[1:text.index("]:")]
    return None


def _tail(text: str, chars: int = TAIL_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= chars:
        return text
    cut = text[-chars:]
    return cut[cut.find(" ") + 1:] if " " in cut else cut  # from a word's start


def compose_context(turn: Turn, previous: Sequence[Turn]) -> str:
    """The context of ``turn`` given the turns before it in its session (oldest first)."""
    head = ", ".join(part for part in (turn.speaker, turn.when.date().isoformat() if turn.when else None) if part)
    lines = [head] if head else []
    lines += [f"{p.speaker or 'before'}: {_tail(p.text)}" for p in previous]
    return "\n".join(lines)


def embedding_text(text: str, context: str | None) -> str:
    """What a memory's vector is made from: its text, then its context (the model truncates the end first)."""
    return f"{text}\n{context}" if context else text


def session_contexts(turns: Sequence[Turn], window: int, start: int = 0) -> dict[int, str | None]:
    """The context of every turn of ``turns`` (one session, in order) from index ``start`` on: the
    ``window`` turns before each. None for all when the window is 0 (the context is off)."""
    out: dict[int, str | None] = {}
    for i in range(start, len(turns)):
        out[turns[i].pk] = compose_context(turns[i], turns[max(0, i - window):i]) if window else None
    return out

# The job that rebuilds a whole bank's sessions and contexts (banks.services.context_rebuild).
REBUILD_JOB_KIND = "rebuild_contexts"
