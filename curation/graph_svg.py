"""Draw an ego graph as server-rendered SVG: the focus in the middle, the memories that mention it
on an inner ring, related entities on an outer ring. Every node is a link (entities re-centre the
graph, memories open), every value is escaped, no script and no inline style.

Entities take the bank map's shapes and colours by type (curation/map_svg.py), so one legend reads
both. Labels sit in their own layer above every edge, with a halo, wrapped on two lines rather than
cut short; static/js/graph_zoom.js keeps them at a readable size on screen and hides those that
would overlap until the operator zooms in (a phone shows the focus and the nearest names first)."""

from __future__ import annotations

import math
from collections.abc import Callable

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from banks.selectors.ego import EgoGraph, EgoNode
from curation.map_svg import shape, type_style

WIDTH, HEIGHT = 760, 560
INNER, OUTER = 125, 235
LINE = 24  # characters per label line; two lines, then an ellipsis (the full name is in the title)


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


def wrap(text: str, width: int = LINE, lines: int = 2) -> list[str]:
    """Words onto at most ``lines`` lines of about ``width`` characters; what does not fit ends in "…"."""
    words, i = text.split(), 0
    out: list[str] = []
    while i < len(words) and len(out) < lines - 1:
        line = words[i]
        i += 1
        while i < len(words) and len(line) + 1 + len(words[i]) <= width:
            line += " " + words[i]
            i += 1
        out.append(_short(line, width))
    if i < len(words):
        out.append(_short(" ".join(words[i:]), width))
    return out


def _label(x: float, y: float, rank: int, lines: list[str], css: str = "") -> SafeString:
    spans = format_html_join("", '<tspan x="{}" dy="{}">{}</tspan>',
                             ((_n(x), "0" if i == 0 else "1.15em", line) for i, line in enumerate(lines)))
    return format_html('<text x="{}" y="{}" data-rank="{}" class="{}" text-anchor="middle" '
                       'dominant-baseline="hanging" aria-hidden="true">{}</text>', _n(x), _n(y), rank, css, spans)


def ego_svg(graph: EgoGraph, *, entity_url: Callable[[str], str], memory_url: Callable[[str], str]) -> SafeString:
    memories = [n for n in graph.nodes if n.kind == "memory"]
    entities = [n for n in graph.nodes if n.kind == "entity"]
    where = {graph.focus.key: (WIDTH / 2, HEIGHT / 2)}
    where.update(_ring(memories, INNER, -math.pi / 2))
    where.update(_ring(entities, OUTER, -math.pi / 2 + math.pi / max(2, len(entities))))
    edges, labels = [], []
    for edge in graph.edges:
        if edge.a not in where or edge.b not in where:
            continue
        (x1, y1), (x2, y2) = where[edge.a], where[edge.b]
        if edge.kind == "link":
            # Stop the arrow at the target's outline, so its head is not hidden under the node.
            length = math.hypot(x2 - x1, y2 - y1) or 1.0
            cut = 30 if edge.b == graph.focus.key else 20
            x2, y2 = x2 - (x2 - x1) / length * cut, y2 - (y2 - y1) / length * cut
            edges.append(format_html('<line class="edge edge-link" x1="{}" y1="{}" x2="{}" y2="{}" '
                                     'marker-end="url(#arrow)"/>', _n(x1), _n(y1), _n(x2), _n(y2)))
            labels.append(_label((x1 + x2) / 2, (y1 + y2) / 2, 10_000, [edge.label.replace("_", " ")],
                                 "edge-label"))
        else:
            edges.append(format_html('<line class="edge edge-{}" x1="{}" y1="{}" x2="{}" y2="{}"/>', edge.kind,
                                     _n(x1), _n(y1), _n(x2), _n(y2)))
    shapes = []
    for rank, node in enumerate([graph.focus, *entities]):
        x, y = where[node.key]
        radius = 26 if node.kind == "focus" else 16
        style = type_style(node.entity_type)
        described = f"{node.label} ({style.label.lower()})"
        shapes.append(format_html(
            '<a href="{}" class="node node-{} type-{}" aria-label="{}{}"><title>{}</title>{}</a>',
            entity_url(node.ref), node.kind, style.key, "" if node.kind == "focus" else "re-centre on ",
            described, described, shape(style.shape, x, y, radius)))
        labels.append(_label(x, y + radius * 1.3 + 3, rank, wrap(node.label),
                             "focus-label" if node.kind == "focus" else ""))
    for rank, node in enumerate(memories, start=len(entities) + 1):
        x, y = where[node.key]
        shapes.append(format_html(
            '<a href="{}" class="node node-memory" aria-label="memory: {}"><title>{}</title>'
            '<rect x="{}" y="{}" width="22" height="15" rx="3"/></a>',
            memory_url(node.ref), _short(node.label, 120), node.label, _n(x - 11), _n(y - 7.5)))
        labels.append(_label(x, y + 11, rank, wrap(node.label, 26, 1), "memory-label"))
    return format_html(
        '<svg class="ego graph-pic" viewBox="0 0 {} {}" data-pan-zoom role="group" aria-label="Graph around {}: '
        '{} related entities, {} memories">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrow"/></marker></defs>'
        '<g class="edges">{}</g><g class="nodes">{}</g><g class="labels" font-size="12">{}</g></svg>',
        WIDTH, HEIGHT, graph.focus.label, len(entities), len(memories),
        format_html_join("", "{}", ((e,) for e in edges)), format_html_join("", "{}", ((s,) for s in shapes)),
        format_html_join("", "{}", ((t,) for t in labels)))
