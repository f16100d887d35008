"""Real headless Chromium (Debian's) driven by Playwright against the live test server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the test
# itself (fixtures, assertions) are still synchronous and safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def chromium_path() -> str:
    for candidate in (os.environ.get("MEMORYHUB_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser",
                      shutil.which("chromium") or ""):
        if candidate and Path(candidate).exists():
            return candidate
    raise RuntimeError("Chromium is not installed: `make test` installs Debian's chromium package.")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    # Module scope: Playwright's sync API keeps an event loop running in this thread while it is
    # open, and later tests that start their own loop (asyncio.run) must not find it.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server.url)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.text} @ {m.location} on {page.url}") if m.type == "error" else None)
    page.csp_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def shot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def axe_violations(page, *, ignore: tuple[str, ...] = ()) -> list[str]:
    """Run axe-core (the copy the axe-playwright-python package ships) on the current page.

    ``page.evaluate`` runs in the page without a <script> element, so the Content-Security-Policy
    stays as strict as in production."""
    from importlib.resources import files

    source = files("axe_playwright_python").joinpath("axe.min.js").read_text(encoding="utf-8")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(source)
    result = page.evaluate(
        "() => axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', "
        "'best-practice']}, resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes'][:3]]}"
            for v in result["violations"] if v["id"] not in ignore]
