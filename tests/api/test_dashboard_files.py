"""The dashboard's files as the service serves them: no token, a strict CSP, nothing else
readable, and pages that hold no inline script, no markup built from strings, no other host."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from devserver import gateway
from shared import dashboard

FOLDER = Path(__file__).resolve().parents[2] / "dashboard"


def _get(path: str) -> tuple[int, dict[str, str], str]:
    matched = gateway.match("GET", path)
    assert isinstance(matched, gateway.Matched), path
    answer = gateway.invoke(
        matched, gateway.event(matched, method="GET", path=path, query="", headers={}, body=b"")
    )
    return answer["statusCode"], answer.get("headers") or {}, gateway.response_body(answer).decode()


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/", "text/html"),
        ("/dashboard/app.js", "text/javascript"),
        ("/dashboard/jobs.js", "text/javascript"),
        ("/dashboard/app.css", "text/css"),
    ],
)
def test_each_file_is_served_without_a_token_under_a_strict_csp(path: str, kind: str) -> None:
    status, headers, text = _get(path)
    assert status == 200 and headers["Content-Type"].startswith(kind) and text
    csp = dict(part.split(" ", 1) for part in headers["Content-Security-Policy"].split("; "))
    assert csp["default-src"] == "'none'"
    assert csp["script-src"] == csp["style-src"] == csp["connect-src"] == "'self'"
    assert csp["frame-ancestors"] == "'none'"
    assert "unsafe" not in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("name", ["secret.txt", "..%2Fpyproject.toml", "index.htm", ".."])
def test_nothing_else_is_served(name: str) -> None:
    status, _, text = _get(f"/dashboard/{name}")
    assert status == 404 and "NotFound" in text


def test_the_page_runs_only_its_own_files() -> None:
    html = (FOLDER / "index.html").read_text()
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S)
    assert scripts == [(' type="module" src="/dashboard/app.js"', "")], "no inline script"
    assert not re.search(r"\son\w+=", html) and " style=" not in html, "no inline handlers or styles"
    for name in dashboard.FILES:
        # SVG's namespace is a name that createElementNS takes, never a host that is asked.
        text = (FOLDER / name).read_text().replace('"http://www.w3.org/2000/svg"', "")
        assert not re.search(r"https?://", text), f"{name} names another host"
    modules = sorted(name for name in dashboard.FILES if name.endswith(".js"))
    for name in modules:
        script = "\n".join(
            line for line in (FOLDER / name).read_text().splitlines() if not line.strip().startswith("//")
        )
        for risky in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ):
            assert risky not in script, f"{name}: {risky}"
        assert "localStorage" not in script and "document.cookie" not in script, "the token stays in the tab"
        imported = re.findall(r'^import \{[^}]*\} from "\./([\w-]+\.js)";$', script, re.M)
        assert set(imported) <= set(modules), f"{name} imports a file that is not served"
        assert len(script.splitlines()) <= 350, f"{name}: a module a view, kept short"


def test_every_script_in_the_folder_is_served() -> None:
    """A module left out of `FILES` would be a 404 at the import that names it."""
    assert {p.name for p in FOLDER.iterdir()} == set(dashboard.FILES)
