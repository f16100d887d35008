"""Draw the bank map as server-rendered SVG: one shape per entity type (colour and shape, so the
map reads without colour too), area by mentions, edges as thick as the memories they share, every
node a link to the entity's page. Escaped values only, no script and no inline style.

Labels carry ``data-rank``: static/js/graph_zoom.js shows more of them as the operator zooms in and
keeps their size on screen constant, so a phone shows few readable labels rather than many tiny ones."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from banks.selectors.bank_map import BankMap
from curation.map_layout import force_layout, node_radius

SIZE = 1000.0
LABELLED = 30  # labels shown before any zoom (and without script); the rest appear as the map is zoomed


@dataclass(frozen=True)
class TypeStyle:
    key: str  # the CSS class suffix
    label: str
    shape: str  # circle | square | diamond | triangle | hexagon


TYPE_STYLES = {
    "PERSON": TypeStyle("person", "Person", "circle"),
    "ORG": TypeStyle("org", "Organisation", "square"),
    "ORGANIZATION": TypeStyle("org", "Organisation", "square"),
    "LOCATION": TypeStyle("location", "Place", "diamond"),
    "PRODUCT": TypeStyle("product", "Product", "triangle"),
    "EVENT": TypeStyle("event", "Event", "hexagon"),
}
OTHER = TypeStyle("other", "Other", "hexagon")


def type_style(entity_type: str) -> TypeStyle:
    return TYPE_STYLES.get((entity_type or "").upper(), OTHER)


def _n(value: float) -> str:
    return f"{value:.1f}"


def shape(kind: str, x: float, y: float, r: float) -> SafeString:
    """One node's outline, of about the same area whatever the shape."""
    if kind == "circle":
        return format_html('<circle cx="{}" cy="{}" r="{}"/>', _n(x), _n(y), _n(r))
    if kind == "square":
        s = r * 0.9
        return format_html('<rect x="{}" y="{}" width="{}" height="{}" rx="2"/>', _n(x - s), _n(y - s),
                           _n(2 * s), _n(2 * s))
    if kind == "diamond":
        s = r * 1.2
        points = [(x, y - s), (x + s, y), (x, y + s), (x - s, y)]
    elif kind == "triangle":
        s = r * 1.25
        points = [(x, y - s), (x + s * 0.95, y + s * 0.65), (x - s * 0.95, y + s * 0.65)]
    else:
        points = [(x + r * math.cos(a), y + r * math.sin(a)) for a in (i * math.pi / 3 for i in range(6))]
    return format_html('<polygon points="{}"/>', " ".join(f"{_n(px)},{_n(py)}" for px, py in points))


def edge_width(weight: int, heaviest: int) -> float:
    """Stroke width in screen pixels (the strokes do not scale): 1 for one shared memory, up to 6 for the
    heaviest edge, on a log scale so a hub's edges do not hide the rest."""
    if weight <= 1 or heaviest <= 1:
        return 1.0
    return 1.0 + 5.0 * math.log(weight) / math.log(heaviest)


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def map_svg(graph: BankMap, *, entity_url: Callable[[str], str]) -> SafeString:
    nodes = graph.nodes
    most = max((n.mentions for n in nodes), default=1)
    index = {n.pk: i for i, n in enumerate(nodes)}
    radii = [node_radius(n.mentions, most) for n in nodes]
    edges = [(index[e.a], index[e.b], float(max(e.weight, 1))) for e in graph.edges if e.a in index and e.b in index]
    where = force_layout(len(nodes), edges, radii, size=SIZE)
    heaviest = max((e.weight for e in graph.edges), default=1)
    lines = []
    for edge in graph.edges:
        if edge.a not in index or edge.b not in index:
            continue
        (x1, y1), (x2, y2) = where[index[edge.a]], where[index[edge.b]]
        title = ", ".join(filter(None, [f"{edge.weight} shared memor{'y' if edge.weight == 1 else 'ies'}"
                                        if edge.weight else "", edge.link_type.replace("_", " ")]))
        lines.append(format_html(
            '<line class="{}" x1="{}" y1="{}" x2="{}" y2="{}" stroke-width="{}"><title>{} — {}: {}</title></line>',
            "edge edge-link" if edge.link_type else "edge", _n(x1), _n(y1), _n(x2), _n(y2),
            _n(edge_width(edge.weight, heaviest)), nodes[index[edge.a]].name, nodes[index[edge.b]].name, title))
    shapes, labels = [], []
    for rank, (node, (x, y), r) in enumerate(zip(nodes, where, radii, strict=True)):
        style = type_style(node.entity_type)
        name = f"{node.name} ({style.label.lower()}, {node.mentions} mention{'s' if node.mentions != 1 else ''})"
        shapes.append(format_html('<a href="{}" class="node type-{}" aria-label="{}"><title>{}</title>{}</a>',
                                  entity_url(node.entity_id), style.key, name, name, shape(style.shape, x, y, r)))
        # Labels sit in their own layer above every node and edge, drawn with a halo of the card's colour.
        labels.append(format_html(
            '<text x="{}" y="{}" data-rank="{}" class="{}" text-anchor="middle" dominant-baseline="hanging" '
            'aria-hidden="true">{}</text>', _n(x), _n(y + r + 2), rank, "minor" if rank >= LABELLED else "",
            _short(node.name)))
    return format_html(
        '<svg class="bank-map graph-pic" viewBox="0 0 {} {}" data-pan-zoom role="group" aria-label="Map of the {} most '
        'mentioned entities and {} edges between them">'
        '<g class="edges">{}</g><g class="nodes">{}</g><g class="labels" font-size="13">{}</g></svg>',
        int(SIZE), int(SIZE), len(nodes), len(lines),
        format_html_join("", "{}", ((e,) for e in lines)), format_html_join("", "{}", ((s,) for s in shapes)),
        format_html_join("", "{}", ((t,) for t in labels)))
