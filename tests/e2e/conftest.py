"""A real `emit dev` on 127.0.0.1, started once for the session's end-to-end tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

DEV_TOKEN = "dev-token-change-me"


@dataclass
class DevServer:
    url: str
    token: str
    process: subprocess.Popen[str]


@pytest.fixture(scope="session")
def dev_server() -> Iterator[DevServer]:
    env = dict(os.environ, EMIT_DEV_TOKEN=DEV_TOKEN, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "devserver.cli", "--host", "127.0.0.1", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    url = None
    seen = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            url = found.group(1)
            break
    if url is None:
        process.kill()
        pytest.fail("emit dev did not start:\n" + "".join(seen))
    yield DevServer(url, DEV_TOKEN, process)
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
