"""The README's ten-line follow page, run as written in Chromium against a real `emit dev`.

The page is served from an origin of its own (another port), so its `fetch` of the follow
link is cross-origin, as on a customer's status page: CORS has to let it through.
The browser is the one of `tests/browser/conftest.py` (Debian's Chromium, skipped or
failed as it says).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from emit import Emit

from tests.browser.conftest import require_browser, shot
from tests.dev import DevServer
from tests.support import PATIENCE_S

require_browser()

README = Path(__file__).resolve().parents[2] / "README.md"


def follow_page() -> str:
    text = README.read_text()
    block = re.search(
        r"<!-- follow-page:begin -->\s*```html\n(.*?)```\s*<!-- follow-page:end -->", text, re.S
    )
    assert block, "README.md has no follow-page block"
    return block.group(1)


@pytest.fixture(scope="module")
def page_origin() -> Iterator[str]:
    """A server of the page alone, at an origin other than the API's."""
    html = follow_page().encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_readme_page_is_ten_lines() -> None:
    assert len(follow_page().strip().splitlines()) == 10


def _shows(page: Any, state: str, percent: float) -> None:
    page.wait_for_function(
        "([state, percent]) => document.getElementById('state').textContent === state"
        " && document.getElementById('bar').value === percent",
        arg=[state, percent],
        timeout=PATIENCE_S * 1000,
    )


def test_the_readme_page_shows_a_jobs_progress_from_its_follow_link(
    dev: DevServer, browser: Any, page_origin: str
) -> None:
    with Emit(dev.url, dev.token, "follow-page") as client:
        created = client.jobs.create("render", {"frames": 240})
        link = client.jobs.follow_link(created.id, ttl=600)
        page = browser.new_page()
        errors: list[str] = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.goto(f"{page_origin}/progress.html?link={quote(link.url, safe='')}")
        _shows(page, "PENDING", 0)
        (held,) = client.jobs.claim(count=1, names=["render"], wait=5)
        client.jobs.report([{"id": held.id, "attempt": held.attempt, "progress": {"percent": 40}}])
        _shows(page, "RUNNING", 40)  # within a wait: the page's long poll answers the change
        client.jobs.report(
            [{"id": held.id, "attempt": held.attempt, "progress": {"percent": 100}, "complete": {}}]
        )
        _shows(page, "COMPLETED", 100)
        shot(page, "follow-page")
        assert errors == []
        page.close()


def test_the_readme_page_says_when_a_link_is_not_valid(
    dev: DevServer, browser: Any, page_origin: str
) -> None:
    with Emit(dev.url, dev.token, "follow-page") as client:
        link = client.jobs.follow_link(client.jobs.create("render").id, ttl=600)
        page = browser.new_page()
        page.goto(f"{page_origin}/progress.html?link={quote(link.url[:-2] + 'AA', safe='')}")
        page.wait_for_function(
            "document.getElementById('state').textContent === 'the link answered 401'",
            timeout=PATIENCE_S * 1000,
        )
        page.close()
