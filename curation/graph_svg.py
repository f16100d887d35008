"""Draw an ego graph as server-rendered SVG: the focus in the middle, the memories that mention it
on an inner ring, related entities on an outer ring. Every node is a link (entities re-centre the
graph, memories open), every value is escaped, no script and no inline style."""

from __future__ import annotations

import math
from collections.abc import Callable

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from banks.selectors.ego import EgoGraph, EgoNode

WIDTH, HEIGHT = 760, 520
INNER, OUTER = 120, 215


def _ring(nodes: list[EgoNode], radius: float, offset: float) -> dict[str, tuple[float, float]]:
    if not nodes:
        return {}
    step = 2 * math.pi / len(nodes)
    cx, cy = WIDTH / 2, HEIGHT / 2
    return {n.key: (cx + radius * math.cos(offset + i * step), cy + radius * 0.85 * math.sin(offset + i * step))
            for i, n in enumerate(nodes)}


def _n(value: float) -> str:
    return f"{value:.1f}"


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def ego_svg(graph: EgoGraph, *, entity_url: Callable[[str], str], memory_url: Callable[[str], str]) -> SafeString:
    memories = [n for n in graph.nodes if n.kind == "memory"]
    entities = [n for n in graph.nodes if n.kind == "entity"]
    where = {graph.focus.key: (WIDTH / 2, HEIGHT / 2)}
    where.update(_ring(memories, INNER, -math.pi / 2))
    where.update(_ring(entities, OUTER, -math.pi / 2 + math.pi / max(2, len(entities))))
    edges = []
    for edge in graph.edges:
        if edge.a not in where or edge.b not in where:
            continue
        (x1, y1), (x2, y2) = where[edge.a], where[edge.b]
        marker = mark_safe(' marker-end="url(#arrow)"') if edge.kind == "link" else ""  # noqa: S308 (a constant)
        edges.append(format_html('<line class="edge edge-{}" x1="{}" y1="{}" x2="{}" y2="{}"{}/>', edge.kind,
                                 _n(x1), _n(y1), _n(x2), _n(y2), marker))
        if edge.label:
            edges.append(format_html('<text class="edge-label" x="{}" y="{}" text-anchor="middle">{}</text>',
                                     _n((x1 + x2) / 2), _n((y1 + y2) / 2 - 4), edge.label))
    shapes = []
    for node in [graph.focus, *entities]:
        x, y = where[node.key]
        radius = 26 if node.kind == "focus" else 16
        shapes.append(format_html(
            '<a href="{}" class="node node-{} type-{}" aria-label="{}{} ({})"><title>{} ({})</title>'
            '<circle cx="{}" cy="{}" r="{}"/>'
            '<text x="{}" y="{}" text-anchor="middle">{}</text></a>',
            entity_url(node.ref), node.kind, node.entity_type.lower() or "other",
            "" if node.kind == "focus" else "re-centre on ", node.label, node.entity_type or "entity",
            node.label, node.entity_type or "entity", _n(x), _n(y), radius, _n(x), _n(y + radius + 13),
            _short(node.label, 24)))
    for node in memories:
        x, y = where[node.key]
        shapes.append(format_html(
            '<a href="{}" class="node node-memory" aria-label="memory: {}"><title>{}</title>'
            '<rect x="{}" y="{}" width="14" height="14" rx="3"/>'
            '<text x="{}" y="{}" text-anchor="middle" class="memory-label">{}</text></a>',
            memory_url(node.ref), _short(node.label, 80), node.label, _n(x - 7), _n(y - 7), _n(x), _n(y + 20),
            _short(node.label, 28)))
    return format_html(
        '<svg class="ego" viewBox="0 0 {} {}" role="group" aria-label="Graph around {}: {} related entities, '
        '{} memories">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrow"/></marker></defs>'
        '<g class="edges">{}</g><g class="nodes">{}</g></svg>',
        WIDTH, HEIGHT, graph.focus.label, len(entities), len(memories),
        format_html_join("", "{}", ((e,) for e in edges)), format_html_join("", "{}", ((s,) for s in shapes)))
