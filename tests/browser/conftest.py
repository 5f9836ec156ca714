"""The dashboard in a real browser: Debian's `chromium`, driven by the `playwright` package
with `executable_path` (never `playwright install`, which downloads browsers).

Where Chromium is missing the tests skip, all with one reason (pytest's summary prints it as
one line); with `EMIT_REQUIRE_BROWSER=1` (CI, `.ci/run`) a missing browser fails them instead.
Screenshots of the main views go to `build/screenshots/` (not committed)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.dev import DevServer

CHROMIUM = os.environ.get("EMIT_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
TIMEZONE = "Europe/Paris"
"""The browser's timezone in every test (its locale en-GB): the page shows times in it."""
PATIENCE_MS = 60_000
"""How long an expectation waits for the page: far beyond an idle machine's need."""


def _missing() -> str | None:
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does)"
    try:
        import playwright.sync_api  # noqa: F401, PLC0415
    except ImportError:
        return "the playwright package is not installed (make install)"
    return None


def require_browser() -> None:
    """Called at the top of a browser test module: skips the whole module (one line in the
    summary) without Chromium, unless `EMIT_REQUIRE_BROWSER=1`: then each of its tests fails
    (in the `browser` fixture), and the rest of the run goes on."""
    missing = _missing()
    if missing is not None and os.environ.get("EMIT_REQUIRE_BROWSER") != "1":
        pytest.skip(f"browser tests skipped: {missing}", allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for a module, stopped at its end: Playwright's sync API keeps an event
    loop running in this thread while it is open, which would break any later test of the
    same worker that runs a loop of its own (tests/conftest.py keeps a browser module's
    tests together on one worker, one after another)."""
    missing = _missing()
    if missing is not None:
        pytest.fail(f"EMIT_REQUIRE_BROWSER=1 but {missing}", pytrace=False)
    from playwright.sync_api import expect, sync_playwright  # noqa: PLC0415

    expect.set_options(timeout=PATIENCE_MS)
    with sync_playwright() as driver:
        chromium = driver.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(
        viewport={"width": 1100, "height": 800}, timezone_id=TIMEZONE, locale="en-GB"
    )
    context.set_default_timeout(PATIENCE_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    yield page
    context.close()
    assert not errors, f"the page reported errors: {errors}"


def local(ms: int) -> str:
    """A time as the page shows it: in the browser's timezone, with the zone's name."""
    at = datetime.fromtimestamp(ms / 1000, ZoneInfo(TIMEZONE))
    return at.strftime("%Y-%m-%d %H:%M:%S ") + (at.tzname() or "")


def shot(page: Any, name: str) -> None:
    """A screenshot of the whole page as `build/screenshots/<name>.png`."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def sign_in(page: Any, dev: DevServer, token: str | None = None) -> None:
    from playwright.sync_api import expect  # noqa: PLC0415

    page.goto(dev.url + "/")
    page.fill("#token", token or dev.token)
    page.click("#sign-in button[type=submit]")
    expect(page.locator("h1")).to_have_text("Spaces")
