"""Every screen of an imported Obsidian bank in real Chromium, axe-core clean; unknown ids; the list,
search, graph, dark mode and a 375 px phone, with screenshots under test-artifacts/screenshots."""

from __future__ import annotations

import re

import pytest

from banks.models import Entity, Memory
from banks.services.memories import memory_retain
from portability.formats.registry import open_archive
from portability.services.importer import archive_import
from tests.browser.conftest import axe_violations, shot
from tests.portability.fixtures import FIXTURES

pytestmark = [pytest.mark.browser]


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser(username="ops", password="a-long-pass-phrase")


@pytest.fixture
def vault(make_bank):
    bank = make_bank("vault")
    archive_import(bank=bank, records=open_archive(FIXTURES / "obsidian_vault")[2], actor="test")
    return bank


def login(page):
    page.goto("/login/")
    page.get_by_label("User name").fill("ops")
    page.get_by_label("Password").fill("a-long-pass-phrase")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/$"))


def visit(page, url: str, problems: list[str], status: int = 200) -> None:
    response = page.goto(url)
    if response is None or response.status != status:
        problems.append(f"{url}: HTTP {response.status if response else 'none'}")
        return
    problems.extend(f"{url}: {v}" for v in axe_violations(page))


def test_every_screen_of_an_obsidian_bank_is_reachable_and_accessible(page, admin, vault):
    login(page)
    ids = list(Memory.objects.filter(bank=vault).values_list("memory_id", flat=True))
    assert any("/" in i for i in ids)
    problems: list[str] = []
    for url in ["/", "/?recall=Priya", "/banks/vault/", "/banks/vault/memories/", "/banks/vault/memories/?q=Priya",
                "/banks/vault/memories/?state=all&sort=occurred", "/banks/vault/time/?q=billing",
                "/banks/vault/graph/", "/banks/vault/observations/", "/banks/vault/models/",
                "/banks/vault/directives/", "/banks/vault/duplicates/", "/banks/vault/transfer/",
                "/banks/vault/reflect/?q=who+owns+billing", "/audit/?bank=vault", "/tokens/", "/preferences/"]:
        visit(page, url, problems)
    shot(page, "walk-01-preferences")
    # Open every memory from the list itself, by clicking, ids with slashes included.
    for memory_id in ids:
        page.goto("/banks/vault/memories/?state=all")
        page.locator("a.row-link", has_text=Memory.objects.get(bank=vault, memory_id=memory_id).text[:20]).first.click()
        page.wait_for_selector("#memory-card")
        assert memory_id in page.locator("#memory-card h2").inner_text()
        problems.extend(f"{page.url}: {v}" for v in axe_violations(page))
    shot(page, "walk-02-obsidian-memory")
    page.goto("/banks/vault/")
    shot(page, "walk-03-obsidian-overview")
    assert not problems, "\n".join(problems)
    assert not [e for e in page.csp_errors if "Content Security Policy" in e]


def test_unknown_ids_are_404_pages_with_a_way_back(page, admin, vault):
    login(page)
    problems: list[str] = []
    for url in ["/banks/vault/memories/no-such-memory/", "/banks/vault/memories/note:Archive/gone/",
                "/banks/vault/models/no-such-model/", "/banks/vault/graph/?entity=nobody", "/banks/nowhere/"]:
        visit(page, url, problems, status=404)
        assert page.get_by_role("link", name="Back to your banks").is_visible()
    shot(page, "walk-04-not-found")
    page.get_by_role("link", name="Back to your banks").click()
    page.wait_for_url(re.compile(r"/$"))
    assert not problems, "\n".join(problems)


def test_list_inline_edit_search_paging_and_graph(page, admin, bank):
    for i in range(64):
        memory_retain(bank=bank, text=f"Widget fact {i}: Priya Raman tuned the widget {i * 7} in Berlin.",
                      actor="test", near_dedup=False, tags=["widgets"])
    login(page)
    page.goto("/banks/user-alice/memories/")
    row = page.locator("tbody tr").first
    row.get_by_role("button", name=re.compile("^edit ")).click()
    editor = page.locator("tbody tr").first
    editor.get_by_label("Text").fill("Widget fact edited in the row.")
    editor.get_by_label("Tags").fill("widgets, edited")
    shot(page, "walk-05-inline-edit")
    editor.get_by_role("button", name="Save").click()
    page.wait_for_selector("tbody tr >> text=Widget fact edited in the row.")
    assert Memory.objects.filter(text="Widget fact edited in the row.", tags=["widgets", "edited"]).exists()
    assert not axe_violations(page)

    page.get_by_label("Search (hybrid recall)").fill("widget Priya")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_selector("text=Hits 1–50 of")
    page.get_by_role("link", name="More hits →").click()
    page.wait_for_selector("text=Hits 51–")
    assert "page=2" in page.url
    page.locator("details.explain summary").first.click()
    assert "Fused score" in page.locator("details.explain").first.inner_text()
    shot(page, "walk-06-search-page-2")
    assert not axe_violations(page)

    priya = Entity.objects.get(bank=bank, name="Priya Raman")
    page.goto(f"/banks/user-alice/graph/?entity={priya.entity_id}")
    assert page.locator("svg.ego a.node-memory").count() >= 1
    page.locator("svg.ego a.node-entity", has_text="Berlin").click()
    page.wait_for_selector("text=Around Berlin")
    assert Entity.objects.get(bank=bank, name="Berlin").entity_type == "LOCATION"
    shot(page, "walk-07-graph")
    assert not axe_violations(page)


def test_dark_mode_and_a_375px_phone(browser, live_server, admin, vault):
    context = browser.new_context(viewport={"width": 375, "height": 812}, base_url=live_server.url,
                                  color_scheme="dark")
    page = context.new_page()
    try:
        login(page)
        page.goto("/banks/vault/memories/")
        background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(18, 23, 28)"
        assert page.get_by_role("button", name="Menu").is_visible()
        assert not page.locator("#topnav").is_visible()
        shot(page, "walk-08-phone-dark-memories")
        # Filters sit in a drawer, so the memories start on the first screen.
        assert page.locator("tbody tr").first.bounding_box()["y"] < 812
        page.get_by_role("button", name="Filters").click()
        assert page.get_by_label("Search (hybrid recall)").is_visible()
        page.get_by_role("button", name="Menu").click()
        assert page.get_by_role("link", name="Audit log").is_visible()
        shot(page, "walk-09-phone-dark-menu")
        assert not axe_violations(page)
        page.goto("/banks/vault/")
        shot(page, "walk-10-phone-dark-overview")
        assert not axe_violations(page)
    finally:
        context.close()


def test_axe_check_can_fail_and_keyboard_shortcuts_work(page, admin, vault):
    login(page)
    page.goto("/banks/vault/memories/")
    # The accessibility check is real: an unlabelled input is reported.
    page.evaluate("() => document.querySelector('main').insertAdjacentHTML('beforeend', '<input id=\"bare\">')")
    assert any(v.startswith("label") for v in axe_violations(page))
    page.reload()
    page.keyboard.press("/")
    assert page.evaluate("() => document.activeElement.id") == "f-q"
    page.keyboard.press("Escape")
    page.locator("h1").click()
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.locator("tr.row-current").count() == 1
    first_two = page.locator("tbody tr[data-row]").nth(1)
    assert "row-current" in (first_two.get_attribute("class") or "")
    page.keyboard.press("e")
    page.wait_for_selector("tbody textarea")
    page.keyboard.press("Escape")
    page.locator("h1").click()
    page.keyboard.press("?")
    assert page.locator("#shortcuts").is_visible()
