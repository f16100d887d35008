"""The graph page in real Chromium, at a desktop width and on a 390 px phone: no serious or critical
axe-core finding, labels readable and apart, a legend, every mention reachable by "More mentions",
and a link picker that a search does not empty."""

from __future__ import annotations

import re

import pytest

from banks.models import Entity
from portability.records import EntityRecord, MemoryRecord
from portability.services.importer import archive_import
from tests.browser.conftest import shot
from tests.browser.test_bank_map import login, overlapping, serious
from tests.factories import make_bank

pytestmark = [pytest.mark.browser]

PEOPLE = ["Noah Smith", "Priya Raman", "Inês Costa", "Mariana Okafor-Lindqvist of the Northern Region", "Rui Alves"]


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")


def build(bank, memories: int) -> None:
    def records() -> list[MemoryRecord]:
        return [MemoryRecord(memory_id=f"m{i}", text=f"Report {i}: {PEOPLE[i % 5]} shipped {i * 7} pumps from "
                             f"Berlin for the International Federation of Pump Engineers.",
                             entities=[EntityRecord(name="International Federation of Pump Engineers",
                                                    entity_type="ORG"),
                                       EntityRecord(name=PEOPLE[i % 5], entity_type="PERSON"),
                                       EntityRecord(name="Berlin", entity_type="LOCATION")])
                for i in range(memories)]

    archive_import(bank=bank, records=records, actor="test", extract_entities=False)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_graph_page_is_readable_and_accessible(browser, live_server, admin, width):
    bank = make_bank("user-alice")
    build(bank, 240)
    federation = Entity.objects.get(bank=bank, name="International Federation of Pump Engineers")
    context = browser.new_context(viewport={"width": width, "height": 844}, base_url=live_server.url,
                                  has_touch=width < 500, is_mobile=width < 500,
                                  color_scheme="dark" if width < 500 else "light")
    page = context.new_page()
    try:
        login(page)
        page.goto(f"/banks/user-alice/graph/?entity={federation.entity_id}")
        page.wait_for_selector("svg.ego.pan-zoom-ready")
        assert page.locator("svg.ego a.node-memory").count() >= 1
        assert page.get_by_role("heading", name="Legend").is_visible()
        labels = page.eval_on_selector_all(
            "svg.ego .labels text", "ts => ts.filter(t => getComputedStyle(t).display !== 'none')"
            ".map(t => { const b = t.getBoundingClientRect(); return {w: b.width, h: b.height, x: b.x, y: b.y}; })")
        # The focus's own name is shown in full, on two lines, at a readable size.
        spans = page.eval_on_selector_all("svg.ego .labels text.focus-label tspan", "ts => ts.map(t => t.textContent)")
        assert " ".join(spans) == "International Federation of Pump Engineers"
        assert labels and all(b["h"] >= 12 for b in labels) and not overlapping(labels)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width  # nothing wider than the screen
        shot(page, f"graph-{width}")
        assert not serious(page), serious(page)

        # Every mention, page after page.
        seen: set[str] = set()
        while True:
            listed = page.locator("ol.mentions li a").all_inner_texts()
            seen.update(re.findall(r"Report (\d+):", " ".join(listed)))
            more = page.get_by_role("link", name="More mentions →")
            if not more.count():
                break
            with page.expect_navigation():
                more.click()
        assert seen == {str(i) for i in range(240)}
        assert "of 240" in page.locator("#mentions-h").inner_text()
        assert not serious(page), serious(page)

        # A search that finds only the focus leaves the link picker full.
        page.get_by_label("Find entities").fill("Federation")
        page.get_by_role("button", name="Search").click()
        page.get_by_role("link", name="International Federation of Pump Engineers").first.click()
        page.wait_for_url(re.compile(r"entity="))
        options = page.get_by_label("Entity", exact=True).locator("option").all_inner_texts()
        assert "Berlin" in options and "Noah Smith" in options
        assert not serious(page), serious(page)
    finally:
        context.close()
