"""Near-duplicate clusters for review, read from the pairs the background scan stored.

Pairs whose memories are both still live and at least ``threshold`` similar are grouped
transitively. Two queries whatever the bank's size: the pairs (most similar first, capped), then
the memories of the clusters shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from banks.models import Bank, DuplicatePair, Memory

# More pairs than this are not clustered per request; the most similar ones come first (the page says
# so). Each pair read costs two lookups of its memories: after the 1M bank's first full scan (21,908
# pairs) reading 5,000 took 35-80 ms of a page whose p95 was 146-198 ms; the 50 clusters a page
# shows come from the strongest pairs.
MAX_PAIRS = 2000


@dataclass
class Cluster:
    memories: list[Memory] = field(default_factory=list)
    similarity: float = 0.0


@dataclass
class ClusterPage:
    clusters: list[Cluster]
    cluster_count: int
    pairs_read: int
    capped: bool


def _live_pairs(bank: Bank, threshold: float) -> list[tuple[int, int, float]]:
    return list(
        DuplicatePair.objects.filter(
            bank=bank, similarity__gte=threshold,
            memory_a__archived_at__isnull=True, memory_a__forgotten_at__isnull=True,
            memory_b__archived_at__isnull=True, memory_b__forgotten_at__isnull=True,
        ).order_by("-similarity", "pk").values_list("memory_a_id", "memory_b_id", "similarity")[:MAX_PAIRS + 1]
    )


def duplicate_clusters(*, bank: Bank, threshold: float, limit: int = 50) -> ClusterPage:
    pairs = _live_pairs(bank, threshold)
    capped = len(pairs) > MAX_PAIRS
    pairs = pairs[:MAX_PAIRS]
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])  # path halving keeps chains short
            x = parent[x]
        return x

    best: dict[int, float] = {}
    for a, b, _similarity in pairs:
        parent.setdefault(a, a)
        parent.setdefault(b, b)
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[ra] = rb
    groups: dict[int, list[int]] = {}
    for pk in parent:
        groups.setdefault(root(pk), []).append(pk)
    for a, _b, similarity in pairs:
        r = root(a)
        best[r] = max(best.get(r, 0.0), similarity)
    ordered = sorted(groups.items(), key=lambda item: (-best[item[0]], min(item[1])))
    shown = ordered[:limit]
    rows = Memory.objects.defer("embedding", "search_vector").in_bulk([pk for _, pks in shown for pk in pks])
    clusters = []
    for r, pks in shown:
        members = sorted((rows[pk] for pk in pks if pk in rows), key=lambda m: (m.retained_at, m.pk))
        if len(members) > 1:
            clusters.append(Cluster(memories=members, similarity=best[r]))
    return ClusterPage(clusters=clusters, cluster_count=len(groups), pairs_read=len(pairs), capped=capped)
