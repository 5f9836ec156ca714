"""`AsyncEmit` and the async workers against a real `emit dev`: the same calls as `Emit`
(made from the same flows), and several workers served in one process, on one loop."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import emit
import pytest
from emit import AsyncEmit, Emit, HeldJob, JobTemplate, Rate

from tests.e2e.conftest import DevServer
from tests.sdk.support import FAST
from tests.support import PATIENCE_S

T = TypeVar("T")


async def until(check: Callable[[], Awaitable[T | None]]) -> T:
    """`check()`'s first truthy answer, asked again until it gives one (never a fixed wait)."""
    deadline = asyncio.get_running_loop().time() + PATIENCE_S
    while True:
        answer = await check()
        if answer:
            return answer
        assert asyncio.get_running_loop().time() < deadline, "never true"
        await asyncio.sleep(0.02)


def test_the_async_client_makes_the_same_calls(dev: DevServer, space: str) -> None:
    async def main() -> None:
        async with AsyncEmit(dev.url, dev.token, space) as client:
            later = datetime.now(UTC) + timedelta(hours=1)
            made = await client.jobs.create(
                "mail", {"to": "a@example.com"}, key="k1", run_at=later, timeout=timedelta(minutes=2)
            )
            assert made.new and not (await client.jobs.create("mail", key="k1")).new
            job = await client.jobs.get(made.id)
            assert job.timeout == timedelta(minutes=2) and abs(job.run_at - later) < timedelta(milliseconds=1)
            assert job.created_at.tzinfo is not None
            assert [j.id async for j in client.jobs.list(name="mail")] == [made.id]
            [batch] = await client.jobs.create_many([emit.NewJob("sms", delay=30)])
            assert (await client.jobs.get(batch.id)).run_at_ms - job.created_at_ms >= 30_000

            policy = await client.names.update("mail", rate=Rate(5, timedelta(seconds=2)), aging_interval=30)
            assert policy.rate == Rate(5, 2) and policy.aging_interval == timedelta(seconds=30)
            settings = await client.spaces.update(key_window=timedelta(minutes=5), max_attempts=6)
            assert (settings.key_window, settings.max_attempts) == (timedelta(minutes=5), 6)
            schedule = await client.schedules.put(
                "nightly", cron="0 3 * * *", job=JobTemplate("report", timeout=timedelta(minutes=10))
            )
            assert schedule.job.timeout == timedelta(minutes=10) and schedule.next_runs[0] > datetime.now(UTC)
            assert [s.id async for s in client.schedules.list()] == ["nightly"]
            minted = await client.tokens.create(["read"], spaces=[space], name="async test")
            assert minted.token.id in [t.id for t in await client.tokens.list()]
            await client.tokens.revoke(minted.token.id)

            now = await client.jobs.create("now")
            [held] = await client.jobs.claim(count=1, names=["now"], wait=0, lease=timedelta(seconds=30))
            assert held.max_attempts == 6 and held.failures == 0
            [outcome] = await client.jobs.report([{"id": held.id, "attempt": held.attempt, "complete": {}}])
            assert outcome.status == "completed"
            followed = [u async for u in client.jobs.follow(now.id, interval=timedelta(milliseconds=20))]
            assert isinstance(followed[-1], emit.Job) and followed[-1].status == "completed"
            assert followed[-1].finished_at is not None

    asyncio.run(main())


def test_both_clients_have_the_same_calls_with_the_same_signatures() -> None:
    with Emit("http://127.0.0.1:1", "t", "s") as blocking:
        aio = AsyncEmit("http://127.0.0.1:1", "t", "s")
        for resource in ("jobs", "names", "schedules", "spaces", "tokens"):
            mine, theirs = getattr(blocking, resource), getattr(aio, resource)
            calls = {n for n in dir(type(mine)) if not n.startswith("_") and callable(getattr(mine, n))}
            assert calls == {
                n for n in dir(type(theirs)) if not n.startswith("_") and callable(getattr(theirs, n))
            }
            for name in calls:
                one, other = inspect.signature(getattr(mine, name)), inspect.signature(getattr(theirs, name))
                assert one.parameters == other.parameters, f"{resource}.{name}"
                assert getattr(mine, name).__doc__ == getattr(theirs, name).__doc__
        assert "delay: 'Duration | None' = None" in str(inspect.signature(blocking.jobs.create))
        assert str(inspect.signature(blocking.jobs.get)).endswith("-> 'Job'")


def test_help_shows_the_resources_and_no_signature_takes_ms() -> None:
    described = inspect.getdoc(Emit.jobs) or ""
    assert "create" in described
    for cls in (Emit, AsyncEmit):
        for resource in ("jobs", "names", "schedules", "spaces", "tokens"):
            assert isinstance(getattr(cls, resource), property) and getattr(cls, resource).__doc__
    with Emit("http://127.0.0.1:1", "t", "s") as client:
        for resource in ("jobs", "names", "schedules", "spaces", "tokens"):
            obj = getattr(client, resource)
            for name in dir(obj):
                if not name.startswith("_") and callable(getattr(obj, name)):
                    params = inspect.signature(getattr(obj, name)).parameters
                    assert not [p for p in params if p.endswith("_ms")], f"{resource}.{name}"
        for fn in (client.worker, emit.RetryAfter, emit.sign, emit.verify_signature, emit.NewJob):
            assert not [p for p in inspect.signature(fn).parameters if p.endswith("_ms")], fn


def test_several_async_workers_serve_in_one_process_and_stop_gracefully(
    dev: DevServer, space: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="emit.worker")
    seen: dict[str, list[tuple[int | None, bool]]] = {"a": [], "b": []}

    async def main() -> None:
        async with AsyncEmit(dev.url, dev.token, space) as client:

            @client.worker(names=["a"], concurrency=2, **FAST)
            async def first(job: HeldJob[Any]) -> dict[str, Any]:
                seen["a"].append((job.max_attempts, job.last_try))
                return {"a": job.payload}

            @client.worker(names=["b"], **FAST)
            async def second(job: HeldJob[Any]) -> None:
                seen["b"].append((job.max_attempts, job.last_try))
                if job.attempt == 1:
                    raise emit.RetryAfter("not yet", after=timedelta(0))

            a = [(await client.jobs.create("a", i)).id for i in range(3)]
            b = (await client.jobs.create("b", max_attempts=2)).id
            serving = asyncio.create_task(emit.serve(first, second, handle_signals=False))

            async def all_done() -> bool:
                jobs = [await client.jobs.get(i) for i in [*a, b]]
                return all(j.finished for j in jobs)

            await until(all_done)
            first.stop()
            second.stop()
            await asyncio.wait_for(serving, PATIENCE_S)
            assert [(await client.jobs.get(i)).result for i in a] == [{"a": 0}, {"a": 1}, {"a": 2}]
            last = await client.jobs.get(b)
            assert (last.status, last.attempt) == ("completed", 2)

    asyncio.run(main())
    assert seen["b"] == [(2, False), (2, True)], "the second attempt knows it is the last"
    messages = [r.getMessage() for r in caplog.records if r.name == "emit.worker"]
    assert any("started: names a, concurrency 2" in m for m in messages)
    assert any(m.startswith("claimed job ") and "(b) attempt 2" in m for m in messages)


def test_serve_stops_the_others_when_one_worker_fails(dev: DevServer, space: str) -> None:
    async def main() -> None:
        async with AsyncEmit(dev.url, dev.token, space) as client:

            async def handle(job: HeldJob[Any]) -> None:
                return None

            fine = client.worker(names=["ok"], **FAST)(handle)
            broken = client.worker(names=[f"x{i}" for i in range(33)], **FAST)(handle)  # a claim takes 32
            with pytest.raises(emit.InvalidArgument):
                await asyncio.wait_for(emit.serve(fine, broken, handle_signals=False), PATIENCE_S)

    asyncio.run(main())


def test_a_blocking_clients_worker_serves_beside_an_async_one(dev: DevServer, space: str) -> None:
    async def main() -> None:
        with Emit(dev.url, dev.token, space) as blocking:
            async with AsyncEmit(dev.url, dev.token, space) as aio:

                @blocking.worker(names=["plain"], **FAST)
                def plain(job: HeldJob[Any]) -> str:
                    return "plain"

                @aio.worker(names=["awaited"], **FAST)
                async def awaited(job: HeldJob[Any]) -> str:
                    return "awaited"

                ids = [blocking.jobs.create("plain").id, (await aio.jobs.create("awaited")).id]
                serving = asyncio.create_task(aio.serve(plain, awaited, handle_signals=False))

                async def results() -> list[Any] | None:
                    jobs = [await aio.jobs.get(i) for i in ids]
                    return [j.result for j in jobs] if all(j.finished for j in jobs) else None

                assert await until(results) == ["plain", "awaited"]
                plain.stop()
                awaited.stop()
                await asyncio.wait_for(serving, PATIENCE_S)

    asyncio.run(main())
