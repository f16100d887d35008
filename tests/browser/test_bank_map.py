"""The whole-bank map in real Chromium: nodes, legend, pan and zoom, at a desktop width and on a dark
390 px phone, with no serious or critical axe-core finding; the graph page it links to as well."""

from __future__ import annotations

import re

import pytest

from banks.models import Entity
from tests.browser.conftest import axe_violations, shot
from tests.curation.test_bank_map import grow
from tests.factories import make_bank

pytestmark = [pytest.mark.browser]


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")


def login(page) -> None:
    page.goto("/login/")
    page.get_by_label("User name").fill("ops")
    page.get_by_label("Password").fill("a-long-pass-phrase")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))


def serious(page) -> list[str]:
    return [v for v in axe_violations(page) if "(serious)" in v or "(critical)" in v]


def label_boxes(page) -> list[dict]:
    return page.eval_on_selector_all(
        "svg.bank-map .labels text", "ts => ts.filter(t => getComputedStyle(t).display !== 'none')"
        ".map(t => { const b = t.getBoundingClientRect(); return {w: b.width, h: b.height, x: b.x, y: b.y}; })")


def overlapping(boxes: list[dict]) -> list[tuple[dict, dict]]:
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a["x"] < b["x"] + b["w"] - 1 and b["x"] < a["x"] + a["w"] - 1
            and a["y"] < b["y"] + b["h"] - 1 and b["y"] < a["y"] + a["h"] - 1]


@pytest.mark.parametrize("width", [1280, 390])
def test_the_map_renders_nodes_and_a_legend_and_zooms(browser, live_server, admin, width):
    bank = make_bank("user-alice")
    grow(bank, 600, 120)
    context = browser.new_context(viewport={"width": width, "height": 844}, base_url=live_server.url,
                                  has_touch=width < 500, is_mobile=width < 500,
                                  color_scheme="dark" if width < 500 else "light")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        login(page)
        page.goto("/banks/user-alice/")
        page.get_by_role("navigation", name="Bank").get_by_role("link", name="Map").click()
        page.wait_for_selector("svg.bank-map.pan-zoom-ready")
        assert page.locator("svg.bank-map a.node").count() == 50
        assert page.get_by_role("heading", name="Legend").is_visible()
        assert page.locator(".legend-items li").filter(has_text="Person").is_visible()
        box = page.locator("svg.bank-map").bounding_box()
        assert box["width"] <= width and box["height"] > 250
        labels = label_boxes(page)
        assert labels and all(b["h"] >= 12 for b in labels)  # labels readable: ~13 px on screen at any width
        assert not overlapping(labels)
        shot(page, f"map-{width}")
        assert not serious(page), serious(page)

        # Zooming in shows more labels, at the same size on screen.
        before = len(labels)
        for _ in range(3):
            page.get_by_role("button", name="Zoom in").click()
        after = label_boxes(page)
        assert len(after) >= before and all(12 <= b["h"] <= 20 for b in after) and not overlapping(after)
        if width < 500:
            assert len(after) > before  # a phone starts with the biggest names only
        # Dragging pans (the view moves, no node is opened); Fit brings the whole map back.
        view = page.locator("svg.bank-map").get_attribute("viewBox")
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + 60, y + 40, steps=6)
        page.mouse.up()
        assert page.locator("svg.bank-map").get_attribute("viewBox") != view and "/map/" in page.url
        page.get_by_role("button", name="Fit").click()
        assert page.locator("svg.bank-map").get_attribute("viewBox") == "0 0 1000 1000"

        # More entities on request, still bounded by the server.
        page.get_by_label("Entities shown").select_option("100")
        page.get_by_role("button", name="Show").click()
        page.wait_for_url(re.compile(r"n=100"))
        assert page.locator("svg.bank-map a.node").count() == 100

        # A node opens the entity's page.
        top = Entity.objects.filter(bank=bank).order_by("-mention_count", "name").first()
        page.locator("svg.bank-map a.node").first.dispatch_event("click")
        page.wait_for_url(re.compile(r"/graph/\?entity="))
        assert page.get_by_role("heading", name=re.compile(f"Around {top.name}")).is_visible()
        assert not serious(page), serious(page)
    finally:
        context.close()
    assert not errors, errors
