"""ChatGPT ``conversations.json``: one memory per user→assistant exchange on the conversation's
current branch (from ``current_node`` up to the root), skipping conversations marked
do-not-remember, hidden and system messages, and tool traffic."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memoryhub.input_rules import parse_time
from portability.formats.compression import read_document
from portability.paths import Location, as_location
from portability.records import ArchiveHeader, MemoryRecord, RecordError, RecordSkipped


def _text(message: dict[str, Any]) -> tuple[str, list[Any]]:
    content = message.get("content") or {}
    parts = content.get("parts") or []
    texts = [p for p in parts if isinstance(p, str) and p.strip()]
    attachments = [p.get("asset_pointer") for p in parts if isinstance(p, dict) and p.get("asset_pointer")]
    return "\n".join(texts).strip(), attachments


def _hidden(message: dict[str, Any]) -> bool:
    meta = message.get("metadata") or {}
    return bool(meta.get("is_visually_hidden_from_conversation")) or message.get("author", {}).get("role") in {
        "system", "tool"}


def _branch(mapping: dict[str, Any], current: str | None) -> list[dict[str, Any]]:
    if not current or current not in mapping:
        # No usable current node: follow the newest child at every fork from the root.
        roots = [k for k, v in mapping.items() if not v.get("parent")]
        current = roots[0] if roots else None
        while current and mapping[current].get("children"):
            children = [c for c in mapping[current]["children"] if c in mapping]
            if not children:
                break
            current = max(children, key=lambda c: ((mapping[c].get("message") or {}).get("create_time") or 0))
    path, seen = [], set()
    while current and current in mapping and current not in seen:
        seen.add(current)
        path.append(mapping[current])
        current = mapping[current].get("parent")
    return list(reversed(path))


def conversation_records(conversation: dict[str, Any], index: int) -> Iterator[MemoryRecord | RecordError]:
    cid = conversation.get("conversation_id") or conversation.get("id") or f"conversation-{index}"
    if conversation.get("is_do_not_remember"):
        yield RecordSkipped(f"conversations[{index}]", f"conversation {cid} is marked do-not-remember; skipped")
        return
    messages = [n["message"] for n in _branch(conversation.get("mapping") or {}, conversation.get("current_node"))
                if n.get("message")]
    pending: dict[str, Any] | None = None
    answers: list[dict[str, Any]] = []

    def flush() -> MemoryRecord | None:
        if pending is None or not answers:
            return None
        user_text, attachments = _text(pending)
        answer = "\n\n".join(_text(a)[0] for a in answers if _text(a)[0])
        when = parse_time(pending.get("create_time")) or parse_time(answers[0].get("create_time")) or parse_time(
            conversation.get("create_time"))
        return MemoryRecord(
            text=f"[user]: {user_text}\n[assistant]: {answer}", memory_id=f"chatgpt:{pending.get('id')}",
            fact_type="experience", tags=["chatgpt"], occurred_at=when, created_at=when, source=f"chatgpt:{cid}",
            metadata={"chatgpt": {"conversation_id": cid, "title": conversation.get("title"),
                                  "user_message_id": pending.get("id"),
                                  "assistant_message_ids": [a.get("id") for a in answers],
                                  "model_slug": (answers[-1].get("metadata") or {}).get("model_slug"),
                                  "attachments": attachments, "branch": "current"}},
            position=f"conversations[{index}]")

    for message in messages:
        if _hidden(message):
            continue
        role = (message.get("author") or {}).get("role")
        if role == "user" and _text(message)[0]:
            record = flush()
            if record:
                yield record
            pending, answers = message, []
        elif role == "assistant" and pending is not None and _text(message)[0]:
            answers.append(message)
    record = flush()
    if record:
        yield record


def read_chatgpt(path: Path | Location, *, max_bytes: int = 200 * 1024 * 1024, **_: Any
                 ) -> tuple[ArchiveHeader, Iterator[MemoryRecord | RecordError]]:
    path = as_location(path)
    data = json.loads(read_document(path, max_bytes).decode("utf-8-sig"))
    if not isinstance(data, list):
        raise ValueError("not a ChatGPT export: conversations.json must be a JSON array")

    def records() -> Iterator[MemoryRecord | RecordError]:
        for i, conversation in enumerate(data):
            if isinstance(conversation, dict):
                yield from conversation_records(conversation, i)
            else:
                yield RecordError(f"conversations[{i}]", "not a conversation object")

    return ArchiveHeader(format="chatgpt", provider="chatgpt", extra={"conversations": len(data)}), records()
