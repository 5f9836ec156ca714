"""Real `emit dev` processes on 127.0.0.1, for the end-to-end and SDK tests."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from tests.support import PATIENCE_S

DEV_TOKEN = "dev-token-change-me"


@dataclass
class DevServer:
    url: str
    token: str
    process: subprocess.Popen[str]
    output: deque[str] = field(default_factory=lambda: deque(maxlen=500))
    """The server's last lines: read all along, so a full pipe never blocks the server."""
    reader: threading.Thread | None = None

    def stop(self) -> list[str]:
        """Stop it; answers its last lines, every one of them read (up to its exit)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=PATIENCE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
        if self.reader is not None:
            self.reader.join(PATIENCE_S)
        return list(self.output)


def start_dev(*args: str, token: str = DEV_TOKEN) -> DevServer:
    """Start `emit dev` on a free port and wait for its ready line."""
    env = dict(os.environ, EMIT_DEV_TOKEN=token, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "devserver.cli", "--host", "127.0.0.1", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    deadline = time.monotonic() + PATIENCE_S
    seen = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            server = DevServer(found.group(1), token, process)
            server.output.extend(seen)
            server.reader = threading.Thread(target=_drain, args=(process, server.output), daemon=True)
            server.reader.start()
            return server
    process.kill()
    raise AssertionError("emit dev did not start:\n" + "".join(seen))


def _drain(process: subprocess.Popen[str], into: deque[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        into.append(line)
        if os.environ.get("EMIT_DEV_ECHO"):
            sys.stderr.write(f"[emit dev] {line}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
