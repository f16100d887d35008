"""Near-duplicate clusters for review, read from the pairs the background scan stored.

Pairs whose memories are both still live and at least ``threshold`` similar are grouped, but never
across texts that name different people, places, amounts or dates (banks.duplicate_rule). Two queries whatever the bank's size: the pairs (most similar first, capped), their texts, then
the memories of the clusters shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from banks.duplicate_rule import Facts, same_fact, text_facts, word_diff
from banks.models import Bank, DuplicatePair, Memory

# More pairs than this are not clustered per request; the most similar ones come first (the page says
# so). Each pair read costs two lookups of its memories: after the 1M bank's first full scan (21,908
# pairs) reading 5,000 took 35-80 ms of a page whose p95 was 146-198 ms; the 50 clusters a page
# shows come from the strongest pairs.
MAX_PAIRS = 2000


@dataclass
class ClusterPair:
    """Two members of a cluster, how similar, and their words side by side (banks.duplicate_rule.word_diff)."""

    a: Memory
    b: Memory
    similarity: float
    diff: list[tuple[str, str]]


@dataclass
class Cluster:
    memories: list[Memory] = field(default_factory=list)
    similarity: float = 0.0
    pairs: list[ClusterPair] = field(default_factory=list)


@dataclass
class ClusterPage:
    clusters: list[Cluster]
    cluster_count: int
    pairs_read: int
    capped: bool
    offset: int = 0
    limit: int = 50

    @property
    def next_offset(self) -> int | None:
        return self.offset + self.limit if self.offset + self.limit < self.cluster_count else None

    @property
    def previous_offset(self) -> int | None:
        return max(0, self.offset - self.limit) if self.offset else None


def _live_pairs(bank: Bank, threshold: float) -> list[tuple[int, int, float]]:
    return list(
        DuplicatePair.objects.filter(
            bank=bank, similarity__gte=threshold, memory_a__bank=bank, memory_b__bank=bank,
            memory_a__archived_at__isnull=True, memory_a__forgotten_at__isnull=True,
            memory_b__archived_at__isnull=True, memory_b__forgotten_at__isnull=True,
        ).order_by("-similarity", "pk").values_list("memory_a_id", "memory_b_id", "similarity")[:MAX_PAIRS + 1]
    )


def link_same_facts(pairs: list[tuple[int, int, float]], facts: dict[int, Facts]) -> list[list[int]]:
    """Groups of memories joined by pairs, strongest first, where every two members name the same things.

    A pair joins two groups only when each member of one states the same fact as each member of the
    other (banks.duplicate_rule): A like B and B like C never puts C beside A when C names another
    person, amount or date, however the similarities chain.
    """
    group_of: dict[int, list[int]] = {}
    for a, b, _similarity in sorted(pairs, key=lambda p: -p[2]):
        if a not in facts or b not in facts:
            continue
        ga, gb = group_of.get(a, [a]), group_of.get(b, [b])
        if ga is gb or not all(same_fact(facts[x], facts[y]) for x in ga for y in gb):
            continue
        joined = ga + gb
        for pk in joined:
            group_of[pk] = joined
    groups = {id(g): g for g in group_of.values()}
    return list(groups.values())


def duplicate_clusters(*, bank: Bank, threshold: float, limit: int = 50, offset: int = 0) -> ClusterPage:
    pairs = _live_pairs(bank, threshold)
    capped = len(pairs) > MAX_PAIRS
    pairs = pairs[:MAX_PAIRS]
    similarity = {(min(a, b), max(a, b)): s for a, b, s in pairs}
    texts = dict(Memory.objects.filter(bank=bank, pk__in={pk for a, b, _ in pairs for pk in (a, b)}).values_list("pk", "text"))
    groups = link_same_facts(pairs, {pk: text_facts(text) for pk, text in texts.items()})

    def best(group: list[int]) -> float:
        return max(similarity.get((min(x, y), max(x, y)), 0.0) for x in group for y in group if x != y)

    ordered = sorted(groups, key=lambda g: (-best(g), min(g)))
    offset = max(0, offset)
    shown = ordered[offset:offset + limit]
    rows = Memory.objects.filter(bank=bank).defer("embedding", "search_vector").in_bulk([pk for pks in shown for pk in pks])
    clusters = []
    for pks in shown:
        members = sorted((rows[pk] for pk in pks if pk in rows), key=lambda m: (m.retained_at, m.pk))
        if len(members) < 2:
            continue
        # Each stored pair of the cluster, with its similarity and the words that differ.
        card = [ClusterPair(a=x, b=y, similarity=similarity[(min(x.pk, y.pk), max(x.pk, y.pk))],
                            diff=word_diff(x.text, y.text))
                for i, x in enumerate(members) for y in members[i + 1:]
                if (min(x.pk, y.pk), max(x.pk, y.pk)) in similarity]
        clusters.append(Cluster(memories=members, similarity=max(p.similarity for p in card), pairs=card))
    return ClusterPage(clusters=clusters, cluster_count=len(groups), pairs_read=len(pairs), capped=capped,
                       offset=offset, limit=limit)
