"""Helpers for the SDK's tests: a clock moved by hand, running a worker on a thread, and
HTTP transports that lose requests or record them. (`eventually`, the one way a test
waits, is tests.support's.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from emit import Worker

from tests.support import PATIENCE_S, eventually

# Fast settings for tests: short long polls stop quickly; frequent reports show up soon.
FAST: dict[str, Any] = {"poll_wait": 0.2, "report_interval": 0.1, "grace": 5.0}


@contextmanager
def running(worker: Worker) -> Iterator[Worker]:
    """The worker serving on a thread for the block, then stopped and waited for."""
    thread = threading.Thread(target=worker.run, name="test-worker", daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(timeout=PATIENCE_S)
        assert not thread.is_alive(), "the worker did not stop"


class HandClock:
    """The SDK's clock (`emit.clock.Clock`), moved by hand: a wait, on a thread or on an
    event loop, returns once `advance` has taken the clock past its end.

    `advance` answers a mark; `waiting_since(mark)` says whether something has begun a new
    wait since then, which is how a test knows the worker has done what the time it was
    given called for (say, renewed a lease) and gone back to waiting."""

    def __init__(self, start: float = 1_000.0) -> None:
        self._now = start
        self._mark = 0
        self._changed = threading.Condition()
        self._waits: dict[int, tuple[float, int, asyncio.AbstractEventLoop | None, Any]] = {}
        self._ids = iter(range(1 << 62))

    def monotonic(self) -> float:
        with self._changed:
            return self._now

    def sleep(self, seconds: float) -> None:
        with self._changed:
            end, key = self._now + seconds, next(self._ids)
            self._waits[key] = (end, self._mark, None, None)
            try:
                self._changed.wait_for(lambda: self._now >= end)
            finally:
                del self._waits[key]

    async def wait(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._changed:
            key = next(self._ids)
            self._waits[key] = (self._now + seconds, self._mark, loop, done)
        try:
            await done
        finally:
            with self._changed:
                del self._waits[key]

    def advance(self, seconds: float) -> int:
        with self._changed:
            self._now += seconds
            self._mark += 1
            due = [(loop, done) for end, _, loop, done in self._waits.values() if loop and end <= self._now]
            self._changed.notify_all()
            mark = self._mark
        for loop, done in due:
            with contextlib.suppress(RuntimeError):  # that loop has closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, done)
        return mark

    def waiting_since(self, mark: int) -> bool:
        with self._changed:
            return any(since >= mark for _, since, _, _ in self._waits.values())


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


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


__all__ = ["FAST", "Flaky", "HandClock", "Recording", "eventually", "running"]
