"""Where each entity of the bank map sits: a force layout (Fruchterman–Reingold) in a few numpy lines.

Pure: nodes and weighted edges in, coordinates out, the same every time for the same input (the
start is a sunflower spiral by rank, the most mentioned in the middle, no randomness), so a map
does not reshuffle on every reload and a test can pin it."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

ITERATIONS = 150


def node_radius(mentions: int, most: int) -> float:
    """A node's radius in map units: area grows with mentions, from 6 to 22."""
    return 6.0 + 16.0 * math.sqrt(max(mentions, 0) / max(most, 1))


def force_layout(count: int, edges: Sequence[tuple[int, int, float]], radii: Sequence[float], *,
                 size: float = 1000.0, iterations: int = ITERATIONS) -> list[tuple[float, float]]:
    """Positions in a ``size`` square for ``count`` nodes (by index); ``edges`` are (i, j, weight)."""
    if count == 0:
        return []
    if count == 1:
        return [(size / 2, size / 2)]
    if count > 150:
        iterations = max(60, iterations // 2)  # big maps settle in fewer rounds; each round is count² work
    golden = math.pi * (3 - math.sqrt(5))
    idx = np.arange(count, dtype=float)
    spread = np.sqrt(idx + 0.5) / math.sqrt(count)
    pos = np.stack([spread * np.cos(idx * golden), spread * np.sin(idx * golden)], axis=1) * size / 2
    k = size / math.sqrt(count) * 0.55  # the distance two nodes settle at
    src = np.array([e[0] for e in edges], dtype=int)
    dst = np.array([e[1] for e in edges], dtype=int)
    # Heavier edges pull harder, but on a log scale: one hub must not swallow the map.
    pull = np.array([1.0 + math.log(max(e[2], 1.0)) for e in edges], dtype=float)
    temperature = size / 8
    cool = (size / 200 / temperature) ** (1 / max(iterations - 1, 1))
    # float32 halves the memory each round walks (count² pairs); the picture needs no more precision.
    x, y = pos[:, 0].astype(np.float32), pos[:, 1].astype(np.float32)
    pull = pull.astype(np.float32)
    for _ in range(iterations):
        dx = x[:, None] - x[None, :]
        dy = y[:, None] - y[None, :]
        d2 = dx * dx + dy * dy
        np.fill_diagonal(d2, np.inf)
        push = (k * k) / np.maximum(d2, 1.0)  # repulsion k²/d along the unit vector: delta·k²/d²
        mx, my = (dx * push).sum(axis=1), (dy * push).sum(axis=1)
        if len(src):
            ex, ey = x[src] - x[dst], y[src] - y[dst]
            pulled = np.sqrt(ex * ex + ey * ey) / k * pull  # attraction d²/k along the unit vector
            mx -= np.bincount(src, ex * pulled, count) - np.bincount(dst, ex * pulled, count)
            my -= np.bincount(src, ey * pulled, count) - np.bincount(dst, ey * pulled, count)
        # A weak pull to the middle keeps unconnected entities from drifting to the edges.
        mx -= x * 0.05
        my -= y * 0.05
        length = np.sqrt(mx * mx + my * my) + 1e-9
        step = np.minimum(length, temperature) / length
        x += mx * step
        y += my * step
        temperature *= cool
    pos = np.stack([x, y], axis=1)
    pos = _separate(pos, np.asarray(radii, dtype=float), gap=14.0)
    low, high = pos.min(axis=0), pos.max(axis=0)
    scale = (size - 80) / max(float((high - low).max()), 1e-6)
    pos = (pos - low) * scale + 40 + ((size - 80) - (high - low) * scale) / 2
    return [(float(x), float(y)) for x, y in pos]


def _separate(pos: np.ndarray, radii: np.ndarray, *, gap: float, rounds: int = 25) -> np.ndarray:
    """Push apart nodes whose discs (plus room for a label) overlap, a few passes."""
    need = (radii[:, None] + radii[None, :] + gap).astype(np.float32)
    x, y = pos[:, 0].astype(np.float32), pos[:, 1].astype(np.float32)
    for _ in range(rounds):
        dx = x[:, None] - x[None, :]
        dy = y[:, None] - y[None, :]
        dist = np.sqrt(dx * dx + dy * dy) + 1e-6
        np.fill_diagonal(dist, np.inf)
        overlap = np.clip(need - dist, 0, None)
        if not overlap.any():
            break
        share = overlap / 2 / dist
        x += (dx * share).sum(axis=1)
        y += (dy * share).sum(axis=1)
    return np.stack([x, y], axis=1)
