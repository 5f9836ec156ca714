from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from shared.runtime import Runtime
from tests.support import Background, EndpointAws, LocalAws, check_signature

SECRET = "whsec_0123456789abcdef"


@pytest.fixture
def bg(rt: Runtime, local_aws: LocalAws | EndpointAws) -> Background:
    return Background(rt, streams_client=local_aws.streams)


@dataclass
class Receiver:
    """A callback target behind httpx's MockTransport: records what it got, answers as scripted."""

    answers: list[int | Exception] = field(default_factory=list)
    calls: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(request)
        answer = self.answers.pop(0) if self.answers else 204
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(answer)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(c.content) for c in self.calls]


@pytest.fixture
def receiver(rt: Runtime) -> Receiver:
    target = Receiver()
    rt.dispatcher.transport = httpx.MockTransport(target)
    return target


verify = check_signature


class DripServer:
    """A callback receiver on 127.0.0.1: `/ok` is answered at once; on any other path the
    answer's status line comes, then its headers one byte at a time, for as long as the
    client waits (a receiver no read timeout ever catches)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.paths: list[str] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, name="drip-server", daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                request += chunk
            path = request.split(b" ", 2)[1].decode()
            self.paths.append(path)
            try:
                if path == "/ok":
                    conn.sendall(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
                while not self.stopped.wait(0.05):
                    conn.sendall(b"a")
            except OSError:
                return  # the client hung up

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def drip() -> Iterator[DripServer]:
    server = DripServer()
    yield server
    server.stop()
