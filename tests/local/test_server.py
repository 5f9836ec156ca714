"""`emit dev`'s HTTP server takes a burst of connections: the kernel queues them all until
the server accepts them (the standard library's listen backlog is 5); and it answers what
no route takes as API Gateway does."""

from __future__ import annotations

import json
import select
import socket
import threading
import time

import pytest

from devserver.server import DevServer
from tests.support import PATIENCE_S

CLIENTS = 64


def test_64_clients_connecting_at_once_are_all_queued() -> None:
    server = DevServer("127.0.0.1", 0)  # listening, and not accepting yet: as when busy
    port = server.server_port
    sockets = []
    try:
        for _ in range(CLIENTS):
            client = socket.socket()
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
            sockets.append(client)
        connected: set[socket.socket] = set()
        # A connection past the backlog is never completed (its SYN is dropped until the
        # server accepts): the deadline only bounds how long a failure takes to show.
        deadline = time.monotonic() + 20
        while len(connected) < CLIENTS and time.monotonic() < deadline:
            _, writable, _ = select.select([], [s for s in sockets if s not in connected], [], 0.5)
            connected |= {s for s in writable if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0}
        assert len(connected) == CLIENTS
    finally:
        for client in sockets:
            client.close()
        server.server_close()


def _ask(port: int, method: str, path: bytes) -> tuple[int, bytes]:
    """One raw request (the path's bytes as sent, quotes and raw UTF-8 included)."""
    with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S) as client:
        client.sendall(method.encode() + b" " + path + b" HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        data = b""
        while chunk := client.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", b"/dashboard/a`b"),
        ("GET", b'/v1/follow/x"y'),
        ("GET", b"/v1/spaces/x/jobs/a\\b"),
        ("GET", "/v1/spaces/x/jobs/\u00e9t\u00e9".encode()),
        ("POST", b'/v1/spaces/x"/jobs:claim'),
        ("TRACE", b"/v1/spaces"),
        ("OPTIONS", b"/v1/follow/token"),
        ("OPTIONS", b"/v1/spaces/x/jobs"),
        ("PROPFIND", b"/"),
    ],
)
def test_a_path_or_method_no_route_takes_is_404_never_5xx_or_501(method: str, path: bytes) -> None:
    """As API Gateway answers: a method no route takes is 404 (the standard library's own
    page was 501); a path part a route's handler cannot take is 404 from the handler (was
    a 500, logged as unexpected). No token is needed to be told so."""
    server = DevServer("127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        status, body = _ask(server.server_port, method, path)
    finally:
        server.shutdown()
        server.server_close()
    assert status == 404, (status, body)
    assert json.loads(body)["message"] in ("Not Found", "no such resource")
