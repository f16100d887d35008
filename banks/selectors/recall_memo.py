"""Small per-process memos for recall's slowly changing numbers (bank size, word frequencies).

A recall must not pay a round trip to a shared cache (a database table by default) for figures
that only weigh the score: each web process keeps them for a few minutes. Nothing that decides
*whether* a memory can be found is kept here (see recall_keyword).
"""

from __future__ import annotations

import threading
import time
from typing import Any


class TtlMemo:
    """Values that expire after ``seconds``; past ``max_entries`` the oldest half is dropped."""

    def __init__(self, seconds: float, max_entries: int = 50_000) -> None:
        self.seconds = seconds
        self.max_entries = max_entries
        self._values: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()
        _ALL.append(self)

    def get(self, key: Any) -> Any | None:
        item = self._values.get(key)
        if item is None or item[0] < time.monotonic():
            return None
        return item[1]

    def set(self, key: Any, value: Any) -> None:
        with self._lock:
            if len(self._values) >= self.max_entries:
                for old in list(self._values)[: self.max_entries // 2]:  # insertion order: oldest first
                    self._values.pop(old, None)
            self._values[key] = (time.monotonic() + self.seconds, value)

    def forget(self, key: Any) -> None:
        with self._lock:
            self._values.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


_ALL: list[TtlMemo] = []


def clear_recall_memos() -> None:
    """Forget every memo (tests that count statements; after bulk changes an operator wants seen now)."""
    for memo in _ALL:
        memo.clear()
