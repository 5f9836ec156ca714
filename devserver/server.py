"""A local HTTP server in front of the Lambda handlers, as API Gateway is on AWS."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from devserver import clock, gateway

MAX_BODY = 10 * 1024 * 1024  # an HTTP API's payload limit


class GatewayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "emit-dev"
    # An answer is written as headers, then body: with Nagle's algorithm on, the body waits
    # for the client's delayed ACK of the headers, 40 ms on every request of a kept-alive
    # connection.
    disable_nagle_algorithm = True
    server: DevServer
    started = 0.0

    def _serve(self) -> None:
        self.started = time.perf_counter()
        url = urlsplit(self.path)
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            self._send(413, {"message": "Request Entity Too Large"})
            return
        body = self.rfile.read(length) if length else b""
        if url.path == clock.PATH and self.server.test_clock is not None:  # `--test-clock` only
            self._send(
                *clock.answer(
                    self.server.test_clock,
                    self.command,
                    self.headers.get("authorization"),
                    body,
                    self.server.admin_token,
                )
            )
            return
        matched = gateway.match(self.command, url.path)
        if not isinstance(matched, gateway.Matched):
            # API Gateway's own answer when no route matches.
            self._send(404, {"message": "Not Found"})
            return
        event = gateway.event(
            matched,
            method=self.command,
            path=url.path,
            query=url.query,
            headers=dict(self.headers.items()),
            body=body,
            source_ip=self.client_address[0],
        )
        try:
            answer = gateway.invoke(matched, event)
        except Exception as exc:  # a handler that crashes is a 500 from the gateway, as on AWS
            print(f"handler {matched.route.function} crashed: {exc!r}", file=sys.stderr)
            self._send(500, {"message": "Internal Server Error"})
            return
        self._send_raw(
            int(answer.get("statusCode", 200)), answer.get("headers") or {}, gateway.response_body(answer)
        )

    def __getattr__(self, name: str) -> Any:
        """Every method is served, so one no route takes (`TRACE`, `OPTIONS`, ...) is the
        gateway's 404, as on AWS, not the standard library's 501 page."""
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def _send(self, status: int, payload: Any) -> None:
        self._send_raw(status, {"content-type": "application/json"}, json.dumps(payload).encode())

    def _send_raw(self, status: int, headers: dict[str, str], data: bytes) -> None:
        if self.server.verbose:  # one line a request, before its answer: `POST /v1/spaces/a/jobs 200 12 ms`
            ms = (time.perf_counter() - self.started) * 1000
            print(f"{self.command} {urlsplit(self.path).path} {status} {ms:.0f} ms", flush=True)
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Requests are logged by `_send_raw`, in a line of its own making."""

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:  # a request the server could not read
            super().log_message(format, *args)


class DevServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The standard library listens with a backlog of 5: a burst of workers connecting at once
    # (a load test, a pool starting) had connections reset. The kernel caps it (somaxconn).
    request_queue_size = 1024

    def __init__(self, host: str, port: int, *, verbose: bool = False) -> None:
        super().__init__((host, port), GatewayHandler)
        self.verbose = verbose
        self.test_clock: clock.TestClock | None = None
        """`--test-clock`'s, moved through `clock.PATH` with `admin_token`."""
        self.admin_token = ""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up before its answer (a timeout, a killed worker) is not an error."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
