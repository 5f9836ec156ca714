"""`jobs.wait` and `jobs.result` with no server: the job read again after growing pauses
taken on the client's clock, and the deadline read off that clock too (so a test's clock
decides it, as it decides every other wait of the SDK)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from emit import AsyncEmit, Emit, JobFailed, JobTimeout


class VirtualClock:
    """Time that passes only when the SDK waits: each wait moves it, and is noted."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 4))
        self.now += seconds

    async def wait(self, seconds: float) -> None:
        self.sleep(seconds)


def job(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": "01J0000000000000000000000A",
        "space": "s",
        "name": "resize-image",
        "status": status,
        "attempt": 1,
        "maxAttempts": 1,
        "timeoutMs": 60_000,
        "createdAtMs": 0,
        "runAtMs": 0,
    } | fields


def answering(*statuses: dict[str, Any]) -> tuple[list[str], Any]:
    """A handler answering each GET with the next job of `statuses` (the last one after)."""
    asked: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:
        asked.append(f"{request.method} {request.url.path}")
        return httpx.Response(200, json=statuses[min(len(asked) - 1, len(statuses) - 1)])

    return asked, handle


def test_wait_reads_again_after_pauses_that_grow_to_the_interval() -> None:
    asked, handle = answering(*[job("PENDING")] * 6, job("COMPLETED", result={"ok": True}))
    clock = VirtualClock()
    with Emit(
        "http://emit.test", "t", "s", http_transport=httpx.MockTransport(handle), clock=clock
    ) as client:
        assert client.jobs.result("01J0000000000000000000000A", interval=0.3) == {"ok": True}
    assert clock.waits == [0.1, 0.15, 0.225, 0.3, 0.3, 0.3]
    assert asked == ["GET /v1/spaces/s/jobs/01J0000000000000000000000A"] * 7


def test_the_deadline_is_the_clocks_and_the_last_pause_ends_on_it() -> None:
    _, handle = answering(job("RUNNING"))
    clock = VirtualClock()
    with Emit(
        "http://emit.test", "t", "s", http_transport=httpx.MockTransport(handle), clock=clock
    ) as client:
        with pytest.raises(JobTimeout, match="still running after 1s") as timed_out:
            client.jobs.wait("01J0000000000000000000000A", timeout=1)
        assert timed_out.value.job.status == "running"
        assert sum(clock.waits) == pytest.approx(1.0) and clock.waits[-1] < 0.3375
        with pytest.raises(ValueError, match="interval"):
            client.jobs.wait("01J0000000000000000000000A", interval=0)


def test_the_async_client_waits_on_its_clock_too() -> None:
    _, handle = answering(job("PENDING"), job("FAILED", error="ValueError: bad size\nTraceback ..."))
    clock = VirtualClock()

    async def main() -> None:
        transport = httpx.MockTransport(handle)
        async with AsyncEmit("http://emit.test", "t", "s", http_transport=transport, clock=clock) as client:
            with pytest.raises(JobFailed) as failed:
                await client.jobs.result("01J0000000000000000000000A", timeout=30)
            assert failed.value.error_type == "ValueError"
            assert (
                str(failed.value)
                == "job 01J0000000000000000000000A (resize-image) failed: ValueError: bad size"
            )

    asyncio.run(main())
    assert clock.waits == [0.1]
