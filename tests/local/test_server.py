"""`emit dev`'s HTTP server takes a burst of connections: the kernel queues them all until
the server accepts them (the standard library's listen backlog is 5)."""

from __future__ import annotations

import select
import socket
import time

from devserver.server import DevServer

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
