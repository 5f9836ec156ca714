"""Helpers for the SDK's tests: waiting for a condition, running a worker on a thread,
and HTTP transports that lose requests or record them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx
from emit import Worker

T = TypeVar("T")

# Fast settings for tests: short long polls stop quickly; frequent reports show up soon.
FAST: dict[str, Any] = {"poll_wait": 0.2, "report_interval": 0.1, "grace": 5.0}


def eventually(check: Callable[[], T | None], timeout: float = 15.0, interval: float = 0.05) -> T:
    """`check()`'s first truthy answer, asked again until `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s: {check}")
        time.sleep(interval)


@contextmanager
def running(worker: Worker) -> Iterator[Worker]:
    """The worker serving on a thread for the block, then stopped and waited for."""
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "the worker did not stop"


class Flaky(httpx.BaseTransport):
    """Fails chosen requests, before or after the server has them, then passes the rest.

    `failures` maps a (method, path suffix) to how many of those to fail; `after=True`
    forwards the request first and loses the answer, as a dropped connection would."""

    def __init__(
        self,
        failures: dict[tuple[str, str], int],
        *,
        error: type[httpx.TransportError] = httpx.ReadError,
        after: bool = False,
        status: int | None = None,
    ) -> None:
        self.inner = httpx.HTTPTransport()
        self.left = dict(failures)
        self.error = error
        self.after = after
        self.status = status
        self.failed: list[str] = []
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            key = next(
                (
                    k
                    for k, n in self.left.items()
                    if n > 0 and request.method == k[0] and request.url.path.endswith(k[1])
                ),
                None,
            )
            if key is not None:
                self.left[key] -= 1
                self.failed.append(f"{request.method} {request.url.path}")
        if key is None:
            return self.inner.handle_request(request)
        if self.status is not None:
            return httpx.Response(self.status, json={"code": "Internal", "message": "injected"})
        if self.after:
            self.inner.handle_request(request).read()
        raise self.error("injected", request=request)


class Recording(httpx.BaseTransport):
    """Passes every request on, and keeps each report request with its answer."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.reports: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.endswith("/jobs:report"):
            response.read()
            with self.lock:
                self.reports.append((json.loads(request.content), response.json()["outcomes"]))
        return response

    def about(self, job_id: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every report sent for the job, with its outcome, in order."""
        with self.lock:
            return [
                (r, o)
                for sent, outcomes in self.reports
                for r, o in zip(sent, outcomes, strict=True)
                if r["id"] == job_id
            ]
