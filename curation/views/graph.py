"""The graph page: find entities, an entity's ego graph, its typed links and every memory that
mentions it, paged to the last one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from banks.models import Entity, EntityLink
from banks.selectors.ego import ego_graph, entity_mentions
from banks.selectors.graph import graph_search
from curation.access import actor, operator, operator_bank
from curation.forms import GraphLinkForm
from curation.graph_svg import ego_svg
from curation.map_svg import OTHER, TYPE_STYLES
from memoryhub.errors import MemoryHubError

LISTED = 50
MENTIONS_PAGE = 50


def _int(raw: str) -> int | None:
    return int(raw) if raw.isdigit() and len(raw) < 19 else None


@login_required
def graph(request: HttpRequest, bank_id: str) -> HttpResponse:
    bank = operator_bank(request, bank_id)
    q = request.GET.get("q", "").strip()
    entity_id = request.GET.get("entity", "").strip()
    top = list(Entity.objects.filter(bank=bank).order_by("-mention_count", "name")[:LISTED])
    entities = graph_search(bank=bank, query=q, limit=LISTED) if q else top
    focus = Entity.objects.filter(bank=bank, entity_id=entity_id).first() if entity_id else None
    if entity_id and focus is None:
        raise Http404("No such entity")
    if focus is None and entities and not q:
        focus = entities[0]  # the most mentioned entity, so the page opens on a picture
    context = {"bank": bank, "entities": entities, "q": q, "focus": focus, "tab": "graph",
               "entity_total": Entity.objects.filter(bank=bank).count(),
               "can_write": operator(request).can(bank_id, "write"),
               "legend": [*dict.fromkeys([*TYPE_STYLES.values(), OTHER])]}
    if focus is not None:
        ego = ego_graph(bank=bank, focus=focus)
        base = reverse("curation:graph", kwargs={"bank_id": bank.bank_id})
        after = _int(request.GET.get("after", ""))
        start = _int(request.GET.get("from", "")) or 1
        mentions, next_cursor = entity_mentions(bank=bank, entity=focus, after=after, limit=MENTIONS_PAGE)
        # The link picker offers what the search found, the graph's neighbours and the bank's most
        # mentioned entities, whatever the search: a search that finds only the focus left it empty.
        neighbours = [n.ref for n in ego.nodes if n.kind == "entity"]
        near = list(Entity.objects.filter(bank=bank, entity_id__in=neighbours)) if neighbours else []
        picker = sorted({e.pk: e for e in [*entities, *near, *top] if e.pk != focus.pk}.values(),
                        key=lambda e: e.name.lower())
        next_url = None if next_cursor is None else f"{base}?" + urlencode(
            {"entity": focus.entity_id, "after": str(next_cursor), "from": str(start + len(mentions))})
        context.update(
            ego=ego, picker=picker,
            links=EntityLink.objects.with_entities(bank).filter(Q(entity_a=focus) | Q(entity_b=focus))[:100],
            mentions=mentions, mentions_from=start, mentions_to=start + len(mentions) - 1,
            mentions_next=next_url,
            mentions_first=f"{base}?{urlencode({'entity': focus.entity_id})}" if after is not None else None,
            picture=ego_svg(ego, entity_url=lambda ref: f"{base}?{urlencode({'entity': ref})}",
                            memory_url=lambda ref: reverse("curation:memory", args=[bank.bank_id, ref])))
    return render(request, "curation/graph.html", context)


@login_required
@require_POST
def graph_link(request: HttpRequest, bank_id: str) -> HttpResponse:
    from banks.services.graph import entity_link_create, entity_link_delete

    bank = operator_bank(request, bank_id, "write")
    form = GraphLinkForm(request.POST)
    focus = request.POST.get("entity_a", "")
    if not form.is_valid():
        messages.error(request, f"Nothing changed: {form.error_summary()}")
    else:
        data = form.cleaned_data
        try:
            if data["action"] == "unlink":
                entity_link_delete(bank=bank, link_id=data["link_id"], actor=actor(request))
                messages.success(request, "Link removed.")
            else:
                entity_link_create(bank=bank, entity_a=data["entity_a"], entity_b=data["entity_b"],
                                   link_type=data["link_type"], actor=actor(request), evidence=data["evidence"])
                messages.success(request, "Linked.")
        except MemoryHubError as exc:
            messages.error(request, exc.message)
    return redirect(f"{reverse('curation:graph', kwargs={'bank_id': bank.bank_id})}?{urlencode({'entity': focus})}")
