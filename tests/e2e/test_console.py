"""`emit dev`'s console: its banner and errors only, a line per request with `--verbose`,
and one clear line when its port is taken."""

from __future__ import annotations

import re
import socket
import subprocess
import sys

import httpx

from tests.dev import DEV_TOKEN, start_dev
from tests.support import PATIENCE_S

BANNER = re.compile(
    r"^emit dev: (admin token \S+|wake on ws://127\.0\.0\.1:\d+|listening on http://127\.0\.0\.1:\d+)$"
)
REQUEST = re.compile(r"^(GET|POST|PATCH|DELETE) (/\S*) (\d{3}) (\d+) ms$")
HEADERS = {"Authorization": f"Bearer {DEV_TOKEN}"}


def test_without_verbose_it_prints_its_banner_and_nothing_else() -> None:
    server = start_dev()
    try:
        with httpx.Client(base_url=server.url, headers=HEADERS, timeout=PATIENCE_S) as api:
            assert api.post("/v1/spaces/quiet/jobs", json={"name": "n"}).status_code == 200
            assert api.get("/v1/spaces/quiet/jobs/01M3QSGN0103P7EGVBX9D5NTSN").status_code == 404
            # A hundred values of one metric: Powertools prints its buffer then, even when disabled.
            for _ in range(101):
                assert api.post("/v1/spaces/quiet/jobs:claim", json={"count": 1}).status_code == 200
    finally:
        lines = server.stop()
    printed = [line.rstrip("\n") for line in lines]
    assert [line for line in printed if not BANNER.match(line)] == []
    assert len(printed) == 3


def test_with_verbose_it_prints_one_line_per_request() -> None:
    server = start_dev("--verbose")
    try:
        with httpx.Client(base_url=server.url, headers=HEADERS, timeout=PATIENCE_S) as api:
            api.post("/v1/spaces/loud/jobs", json={"name": "n"})
            api.post("/v1/spaces/loud/jobs:claim", json={"count": 1, "waitMs": 0})
            api.get("/v1/spaces/loud/jobs/01M3QSGN0103P7EGVBX9D5NTSN", params={"x": "1"})
            api.get("/nowhere")
    finally:
        lines = server.stop()
    printed = [line.rstrip("\n") for line in lines if not BANNER.match(line.rstrip("\n"))]
    requests = [REQUEST.match(line) for line in printed]
    assert all(requests), printed
    assert [m.groups()[:3] for m in requests if m] == [
        ("POST", "/v1/spaces/loud/jobs", "200"),
        ("POST", "/v1/spaces/loud/jobs:claim", "200"),
        ("GET", "/v1/spaces/loud/jobs/01M3QSGN0103P7EGVBX9D5NTSN", "404"),
        ("GET", "/nowhere", "404"),
    ]


def test_a_port_in_use_is_one_line_that_names_it_and_the_way_out() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = subprocess.run(
            [sys.executable, "-m", "devserver.cli", "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=PATIENCE_S,
            check=False,
        )
    assert ran.returncode != 0
    assert ran.stdout == ""
    [line] = ran.stderr.splitlines()
    assert str(port) in line and "--port" in line and "Traceback" not in line
