"""Near-duplicate clusters for review: recent live memories whose nearest neighbour is above a
similarity threshold, grouped transitively. Pairs an operator dismissed are left apart."""

from __future__ import annotations

from dataclasses import dataclass, field

from banks.models import Bank, Memory
from banks.services.memories import nearest_live_memory

SCAN = 400


@dataclass
class Cluster:
    memories: list[Memory] = field(default_factory=list)
    similarity: float = 0.0


def _dismissed(memory: Memory) -> set[str]:
    return set((memory.metadata or {}).get("_not_duplicate_of", []))


def duplicate_clusters(*, bank: Bank, threshold: float, limit: int = 50) -> list[Cluster]:
    recent = list(Memory.objects.live().filter(bank=bank, embedding_dims__isnull=False)
                  .order_by("-retained_at")[:SCAN])
    by_id = {m.memory_id: m for m in recent}
    parent: dict[str, str] = {}
    best: dict[str, float] = {}

    def root(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for memory in recent:
        if memory.embedding is None:
            continue
        nearest = nearest_live_memory(bank, [float(v) for v in memory.embedding], memory.embedding_dims or 0,
                                      exclude_pk=memory.pk)
        if not nearest or nearest[1] < threshold:
            continue
        other_id, similarity = nearest
        other = by_id.get(other_id) or Memory.objects.filter(bank=bank, memory_id=other_id).first()
        if other is None or other_id in _dismissed(memory) or memory.memory_id in _dismissed(other):
            continue
        by_id.setdefault(other_id, other)
        parent.setdefault(memory.memory_id, memory.memory_id)
        parent.setdefault(other_id, other_id)
        parent[root(memory.memory_id)] = root(other_id)
        best[memory.memory_id] = max(best.get(memory.memory_id, 0.0), similarity)
    groups: dict[str, Cluster] = {}
    for memory_id in parent:
        cluster = groups.setdefault(root(memory_id), Cluster())
        cluster.memories.append(by_id[memory_id])
        cluster.similarity = max(cluster.similarity, best.get(memory_id, 0.0))
    clusters = [c for c in groups.values() if len(c.memories) > 1]
    for cluster in clusters:
        cluster.memories.sort(key=lambda m: m.retained_at)
    clusters.sort(key=lambda c: -c.similarity)
    return clusters[:limit]
