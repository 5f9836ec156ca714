"""`emit dev`'s wake: the WebSocket API that API Gateway runs on AWS, on an address of its own.

What API Gateway does, done here: each handshake is handed to `functions/wake_connect.py`
as a `$connect` event (its answer lets the connection in, with the subprotocol it chose,
or refuses the handshake with its status and body), each message to its route's function
by its `action` (`shared.wake.ROUTES`; `ping` to none), and each close to
`functions/wake_disconnect.py`; a route's answer is sent back on the connection. The
handlers post hints through this server (`post`, the `Poster` API Gateway's management API
is on AWS). Connections idle for 10 minutes, or open for 2 hours, are closed, as API Gateway
closes them.

Hints put off (`shared.wake.HeldLater`) are sent by a thread of their own (`LaterThread`).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import sys
import threading
import time
import uuid
from http import HTTPStatus
from typing import Any

from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

from devserver.gateway import LambdaContext
from shared.runtime import Runtime
from shared.wake import CONNECTION_MS, ROUTES, Gone, HeldLater, Route, route_of

IDLE_S = 600.0
"""API Gateway closes a connection that sent or received nothing for 10 minutes."""
MAX_SIZE = 128 * 1024
"""API Gateway's largest WebSocket message."""
_BY_KEY = {route.key: route for route in ROUTES}


def connection_id() -> str:
    """An id shaped like API Gateway's (16 characters of base64)."""
    return base64.b64encode(os.urandom(11)).decode()


def event(
    route: Route, connection: str, *, headers: dict[str, str] | None = None, body: str | None = None
) -> dict[str, Any]:
    """The Lambda proxy event API Gateway's WebSocket API sends for `route`."""
    kinds = {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}
    context: dict[str, Any] = {
        "routeKey": route.key,
        "eventType": kinds.get(route.key, "MESSAGE"),
        "connectionId": connection,
        "requestId": uuid.uuid4().hex,
        "apiId": "local",
        "stage": "local",
        "domainName": "127.0.0.1",
        "connectedAt": int(time.time() * 1000),
    }
    out: dict[str, Any] = {"requestContext": context, "isBase64Encoded": False}
    if headers is not None:
        out["headers"] = headers
    if body is not None:
        out["body"] = body
    return out


def invoke(route: Route, proxy_event: dict[str, Any]) -> dict[str, Any]:
    """Call the route's handler as Lambda would."""
    assert route.function is not None
    module: Any = importlib.import_module(f"functions.{route.function}")
    answer: dict[str, Any] = module.lambda_handler(proxy_event, LambdaContext(route.function, 10, 256))
    return answer


class WakeServer:
    """The WebSocket API on `host:port` (0: a free port), serving once `start`ed."""

    def __init__(
        self, host: str, port: int, *, idle_s: float = IDLE_S, longest_s: float = CONNECTION_MS / 1000
    ) -> None:
        self.idle_s = idle_s
        self.longest_s = longest_s
        self._open: dict[str, ServerConnection] = {}
        self._lock = threading.Lock()
        self._server: Server = serve(
            self._serve,
            host,
            port,
            process_request=self._handshake,
            select_subprotocol=self._subprotocol,
            compression=None,
            ping_interval=None,
            max_size=MAX_SIZE,
            server_header="emit-dev",
        )
        self.host = host
        self.port = int(self._server.socket.getsockname()[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="emit-wake", daemon=True)

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def connections(self) -> list[str]:
        with self._lock:
            return sorted(self._open)

    def drop(self, connection: str) -> None:
        """Close a connection from the server's side (as API Gateway does after 2 hours)."""
        with self._lock:
            found = self._open.get(connection)
        if found is not None:
            found.close(1001, "Going away")

    # -- Poster ---------------------------------------------------------------------------

    def post(self, connection: str, data: bytes) -> None:
        with self._lock:
            found = self._open.get(connection)
        if found is None:
            raise Gone(connection)
        try:
            found.send(data.decode())
        except ConnectionClosed:
            raise Gone(connection) from None

    # -- the routes -----------------------------------------------------------------------

    def _handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        made = connection_id()
        headers: dict[str, str] = {}
        for name, value in request.headers.raw_items():  # a header sent twice: one, comma-joined
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        answer = invoke(_BY_KEY["$connect"], event(_BY_KEY["$connect"], made, headers=headers))
        status = int(answer.get("statusCode", 200))
        if status >= 300:
            body = str(answer.get("body") or "").encode()
            reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Refused"
            fields = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return Response(status, reason, fields, body)
        answered = {k.lower(): v for k, v in (answer.get("headers") or {}).items()}
        chosen = answered.get("sec-websocket-protocol")
        connection.emit_id = made  # type: ignore[attr-defined]
        connection.emit_protocol = chosen  # type: ignore[attr-defined]
        return None

    @staticmethod
    def _subprotocol(connection: ServerConnection, offered: Any) -> Any:
        chosen = getattr(connection, "emit_protocol", None)
        return chosen if chosen in offered else None

    def _serve(self, connection: ServerConnection) -> None:
        made: str = connection.emit_id  # type: ignore[attr-defined]
        with self._lock:
            self._open[made] = connection
        opened = time.monotonic()
        try:
            while True:
                left = self.longest_s - (time.monotonic() - opened)
                if left <= 0:
                    connection.close(1001, "Going away")
                    break
                try:
                    message = connection.recv(timeout=min(self.idle_s, left))
                except TimeoutError:
                    connection.close(1001, "Going away")
                    break
                self._message(connection, made, message if isinstance(message, str) else message.decode())
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                self._open.pop(made, None)
            try:
                invoke(_BY_KEY["$disconnect"], event(_BY_KEY["$disconnect"], made))
            except Exception as exc:  # as Lambda would: logged, the records left to TTL
                print(f"emit dev: wake disconnect: {exc!r}", file=sys.stderr)

    def _message(self, connection: ServerConnection, made: str, message: str) -> None:
        route = route_of(message)
        if route.function is None:
            return
        try:
            answer = invoke(route, event(route, made, body=message))
        except Exception as exc:  # a crashed handler: API Gateway's own error message
            print(f"emit dev: wake {route.key}: {exc!r}", file=sys.stderr)
            connection.send(json.dumps({"message": "Internal server error", "connectionId": made}))
            return
        if answer.get("body"):
            connection.send(str(answer["body"]))


class LaterThread:
    """Sends the hints put off (`HeldLater`) when their time comes."""

    def __init__(self, runtime: Runtime) -> None:
        later = runtime.wake.later
        assert isinstance(later, HeldLater), "hints put off are sent here only when held here"
        self.runtime = runtime
        self.later = later
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="emit-wake-later", daemon=True)

    def start(self) -> None:
        self.later.on_submit = self._wake.set
        self._thread.start()

    def stop(self) -> None:
        self.later.on_submit = None
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        handler: Any = importlib.import_module("functions.wake_later").lambda_handler
        while not self._stop.is_set():
            now = self.runtime.clock.now_ms()
            for space, name, trailing in self.later.due(now):
                put_off = {"space": space, "name": name, "atMs": now, "trailing": trailing}
                try:  # as Lambda would run it, invoked without waiting
                    handler(put_off, LambdaContext("wake_later", 30, 128))
                except Exception as exc:
                    print(f"emit dev: wake later: {exc!r}", file=sys.stderr)
            next_at = self.later.next_at()
            pause = 1.0 if next_at is None else max(0.0, (next_at - self.runtime.clock.now_ms()) / 1000)
            self._wake.wait(min(pause, 1.0))
            self._wake.clear()


def fire_due(runtime: Runtime) -> int:
    """Send the hints put off that are due by the runtime's clock (the tests, by hand)."""
    later = runtime.wake.later
    assert isinstance(later, HeldLater)
    due = later.due(runtime.clock.now_ms())
    for space, name, trailing in due:
        runtime.wake.later_due(space, name, trailing=trailing)
    return len(due)
