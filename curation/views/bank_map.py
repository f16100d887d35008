"""The whole-bank map: the most mentioned entities and their edges, drawn on the server."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from banks.selectors.bank_map import MAP_SIZES, bank_map, map_size
from curation.access import operator_bank
from curation.map_svg import map_svg, type_style


@login_required
def bank_map_view(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    size = map_size(request.GET.get("n"))
    graph = bank_map(bank=bank, limit=size)
    base = reverse("curation:graph", kwargs={"bank_id": bank.bank_id})
    styles = {type_style(n.entity_type) for n in graph.nodes}
    heaviest = max((e.weight for e in graph.edges), default=0)
    return render(request, "curation/bank_map.html", {
        "bank": bank, "tab": "map", "graph": graph, "size": size, "sizes": MAP_SIZES,
        "picture": map_svg(graph, entity_url=lambda ref: f"{base}?{urlencode({'entity': ref})}") if graph.nodes
        else None,
        "legend": sorted(styles, key=lambda s: s.label), "heaviest": heaviest,
        "typed": any(e.link_type for e in graph.edges),
        "entity_url": base,
    })
