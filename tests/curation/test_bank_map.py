"""The whole-bank map: the most mentioned entities of a bank and their edges, drawn on the server,
bounded (top N by mentions, a fixed number of statements whatever the bank's size)."""

from __future__ import annotations

import re
from urllib.parse import unquote_plus

import pytest

from banks.models import Entity, MemoryEntity
from banks.selectors.bank_map import MAP_MAX, bank_map, map_size
from banks.services.graph import entity_link_create
from curation.map_layout import force_layout
from portability.records import EntityRecord, MemoryRecord
from portability.services.importer import archive_import
from tests.factories import make_bank

pytestmark = pytest.mark.django_db

TYPES = ["PERSON", "ORG", "LOCATION", "PRODUCT", "OTHER"]


def grow(bank, memories: int, entities: int) -> None:
    """``memories`` memories, each naming three of ``entities`` entities; entity i is named about
    memories / (i + 1) times (a few hubs, a long tail), through the import path an archive takes."""
    def records() -> list[MemoryRecord]:
        out = []
        for m in range(memories):
            names = {0 if m % 2 == 0 else 1, (m * 7) % entities, (m * 13 + 5) % max(1, entities // (1 + m % 4))}
            out.append(MemoryRecord(memory_id=f"m{m}", text=f"Fact {m} about the project.",
                                    entities=[EntityRecord(name=f"Entity {i:04d}", entity_type=TYPES[i % 5])
                                              for i in sorted(names)]))
        return out

    archive_import(bank=bank, records=records, actor="test", extract_entities=False)


def nodes_in(page: str) -> list[str]:
    return re.findall(r'<a href="(/banks/[^"]+/graph/\?entity=[^"]+)" class="node', page)


def test_the_map_draws_the_most_mentioned_entities_with_a_legend_and_links(admin_client):
    bank = make_bank("user-alice")
    grow(bank, 300, 80)
    entity_link_create(bank=bank, entity_a="entity 0000", entity_b="entity 0001", link_type="works_with", actor="t")
    page = admin_client.get("/banks/user-alice/map/?n=25").content.decode()
    links = nodes_in(page)
    top = list(Entity.objects.filter(bank=bank).order_by("-mention_count", "name").values_list("entity_id",
                                                                                              flat=True)[:25])
    assert len(links) == 25
    assert {unquote_plus(link.split("entity=")[1]) for link in links} == set(top)
    assert "25 of 80 entities" in page
    assert 'aria-current="page">Map<' in page
    legend = page.split('id="legend-h"')[1].split("</section>")[0]
    for label in ("Person", "Organisation", "Place", "Product", "Other", "1 shared memory", "typed link"):
        assert label in legend, label
    # Edge weight is the number of memories that name both entities.
    heavy = max(bank_map(bank=bank, limit=25).edges, key=lambda e: e.weight)
    a, b = Entity.objects.get(pk=heavy.a), Entity.objects.get(pk=heavy.b)
    both = MemoryEntity.objects.filter(entity=b, memory_id__in=MemoryEntity.objects.filter(entity=a)
                                       .values("memory_id")).count()
    assert both > 1 and heavy.weight == both
    assert f"{a.name} — {b.name}: {both} shared memories" in page
    assert "works with" in page  # the typed link, on its edge
    everything = admin_client.get(f"/banks/user-alice/map/?n={MAP_MAX}").content.decode()
    assert len(nodes_in(everything)) == 80 and "80 of 80 entities" in everything


def test_the_map_takes_the_same_few_queries_for_a_small_and_a_big_bank(admin_client, django_assert_max_num_queries):
    small, big = make_bank("small-bank"), make_bank("big-bank")
    grow(small, 30, 10)
    grow(big, 3000, 900)
    for bank_id in ("small-bank", "big-bank"):
        with django_assert_max_num_queries(10):
            response = admin_client.get(f"/banks/{bank_id}/map/?n={MAP_MAX}")
        assert response.status_code == 200
    assert len(nodes_in(response.content.decode())) == MAP_MAX  # never more than the cap, of 900


def test_the_map_size_is_clamped_and_another_banks_map_is_hidden(client, admin_client, django_user_model):
    assert map_size(None) == 50 and map_size("abc") == 50 and map_size("3") == 25 and map_size("99999") == MAP_MAX
    make_bank("user-alice")
    assert admin_client.get("/banks/user-alice/map/?n=banana").status_code == 200
    assert "No entities yet" in admin_client.get("/banks/user-alice/map/").content.decode()
    assert admin_client.get("/banks/nowhere/map/").status_code == 404
    django_user_model.objects.create_user(username="viewer", password="a-long-pass-phrase")
    client.login(username="viewer", password="a-long-pass-phrase")
    assert client.get("/banks/user-alice/map/").status_code == 404


def test_edges_count_shared_memories_and_stay_in_the_bank():
    bank, other = make_bank("user-alice"), make_bank("user-bob")
    grow(bank, 40, 6)
    grow(other, 40, 6)
    drawn = bank_map(bank=bank, limit=6)
    names = {n.pk: n.entity_id for n in drawn.nodes}
    assert all(e.a in names and e.b in names for e in drawn.edges)
    for edge in drawn.edges:
        shared = (MemoryEntity.objects.filter(entity_id=edge.a).values_list("memory_id", flat=True))
        assert edge.weight == MemoryEntity.objects.filter(entity_id=edge.b, memory_id__in=shared).count()


def test_the_layout_is_stable_and_pulls_linked_nodes_together():
    edges = [(0, 1, 9.0), (1, 2, 9.0), (2, 0, 9.0), (3, 4, 9.0)]
    first = force_layout(6, edges, [10.0] * 6, size=1000)
    assert first == force_layout(6, edges, [10.0] * 6, size=1000)
    assert all(0 <= x <= 1000 and 0 <= y <= 1000 for x, y in first)

    def far(i: int, j: int) -> float:
        return ((first[i][0] - first[j][0]) ** 2 + (first[i][1] - first[j][1]) ** 2) ** 0.5

    assert far(0, 1) < far(0, 3) and far(3, 4) < far(3, 0)
    assert min(far(i, j) for i in range(6) for j in range(i + 1, 6)) >= 20  # no two nodes on top of each other
