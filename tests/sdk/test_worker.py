"""The worker against a real `emit dev`: outcomes, reporting, renewal, cancel, capacity."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import emit
from emit import Emit, HeldJob

from tests.e2e.conftest import DevServer
from tests.sdk.support import FAST, Flaky, HandClock, Recording, eventually, running
from tests.support import PATIENCE_S


def job_when(client: Emit, job_id: str, ready: Callable[[emit.Job], object]) -> emit.Job:
    """The job, read until `ready` says so."""

    def check() -> emit.Job | None:
        job = client.jobs.get(job_id)
        return job if ready(job) else None

    return eventually(check)


def settled(client: Emit, job_id: str) -> emit.Job:
    return job_when(client, job_id, lambda job: job.finished)


def test_a_plain_handler_completes_its_job_and_the_result_reads_back(client: Emit) -> None:
    job_id = client.jobs.create("double", {"n": 21}).id

    @client.worker(names=["double"], **FAST)
    def double(job: HeldJob[dict[str, int]]) -> dict[str, int]:
        return {"n": job.payload["n"] * 2, "attempt": job.attempt}

    with running(double):
        job = settled(client, job_id)
    assert (job.status, job.result, job.attempt, job.failures) == ("completed", {"n": 42, "attempt": 1}, 1, 0)


def test_an_async_handler_completes_its_job(client: Emit) -> None:
    job_id = client.jobs.create("double", {"n": 4}).id

    @client.worker(names=["double"], **FAST)
    async def double(job: HeldJob[dict[str, int]]) -> int:
        await asyncio.sleep(0.05)
        return job.payload["n"] * 2

    with running(double):
        assert settled(client, job_id).result == 8


def test_progress_lines_and_events_show_through_get_lines_and_events(client: Emit) -> None:
    job_id = client.jobs.create("import", {"rows": 3}).id
    halfway = threading.Event()
    seen_halfway: list[emit.Job] = []

    @client.worker(names=["import"], **FAST)
    def handle(job: HeldJob[dict[str, int]]) -> dict[str, int]:
        job.log("info", "import started", metadata={"rows": 3})
        job.log("warning", "row 2 is empty", source="importer")
        job.event({"stage": "reading"})
        job.event({"stage": "writing"})
        job.progress(50, "2 of 3 rows")
        halfway.wait(PATIENCE_S)
        return {"imported": 3}

    with running(handle):
        seen_halfway.append(job_when(client, job_id, lambda job: job.progress))
        halfway.set()
        job = settled(client, job_id)

    assert seen_halfway[0].status == "running"
    assert seen_halfway[0].progress == emit.Progress(50, "2 of 3 rows")
    assert (job.line_count, job.event_count) == (2, 2)
    lines = list(client.jobs.lines(job_id))
    assert [(line.level, line.message, line.source, line.metadata) for line in lines] == [
        ("info", "import started", None, {"rows": 3}),
        ("warn", "row 2 is empty", "importer", None),
    ]
    assert [e.data for e in client.jobs.events(job_id)] == [{"stage": "reading"}, {"stage": "writing"}]


def test_an_exception_fails_the_attempt_with_its_type_message_and_traceback(client: Emit) -> None:
    job_id = client.jobs.create("flaky", max_attempts=3, backoff=timedelta(minutes=1)).id

    @client.worker(names=["flaky"], **FAST)
    def handle(job: HeldJob[Any]) -> None:
        raise RuntimeError("the ledger is locked")

    with running(handle):
        job = job_when(client, job_id, lambda job: job.failures == 1)
    assert (job.status, job.attempt) == ("pending", 1)
    first, *trace = (job.error or "").splitlines()
    assert first == "RuntimeError: the ledger is locked"
    assert trace[0] == "Traceback (most recent call last):"
    assert "in handle" in trace[1] and 'raise RuntimeError("the ledger is locked")' in trace[2]
    assert len(trace) == 3  # the handler's own frame alone: none of the worker's


def test_unrecoverable_fails_the_job_for_good(client: Emit) -> None:
    job_id = client.jobs.create("charge", max_attempts=5).id

    @client.worker(names=["charge"], **FAST)
    def handle(job: HeldJob[Any]) -> None:
        raise emit.Unrecoverable("card declined")

    with running(handle):
        job = settled(client, job_id)
    assert (job.status, job.error, job.attempt, job.failures) == ("failed", "card declined", 1, 1)


def test_retry_after_waits_as_long_as_it_says_before_the_next_attempt(client: Emit) -> None:
    job_id = client.jobs.create("rate-limited", max_attempts=3, backoff=0).id
    attempts: list[tuple[int, float]] = []

    @client.worker(names=["rate-limited"], **FAST)
    def handle(job: HeldJob[Any]) -> str:
        attempts.append((job.attempt, time.monotonic()))
        if job.attempt == 1:
            raise emit.RetryAfter("rate limited by the provider", after=timedelta(seconds=1))
        return "charged"

    with running(handle):
        waiting = job_when(client, job_id, lambda job: job.failures == 1)
        job = settled(client, job_id)
    assert (waiting.status, waiting.error) == ("pending", "rate limited by the provider")
    assert (job.status, job.result, job.failures) == ("completed", "charged", 1)
    assert attempts[1][1] - attempts[0][1] >= 0.9  # the policy alone would have retried at once


def test_release_gives_the_job_back_without_using_up_an_attempt(client: Emit) -> None:
    job_id = client.jobs.create("picky", max_attempts=1).id

    @client.worker(names=["picky"], **FAST)
    def handle(job: HeldJob[Any]) -> int:
        if job.attempt == 1:
            raise emit.Release()
        return job.attempt

    with running(handle):
        job = settled(client, job_id)
    assert (job.status, job.result, job.attempt, job.failures) == ("completed", 2, 2, 0)


def touches(recording: Recording, job_id: str) -> list[dict[str, Any]]:
    """The outcomes of the job's renewals, in order."""
    return [o for r, o in recording.about(job_id) if "touch" in r]


def test_a_handler_running_three_lease_lengths_keeps_its_attempt_through_renewal(
    dev: DevServer, space: str
) -> None:
    clock, recording = HandClock(), Recording()
    client = Emit(dev.url, dev.token, space, http_transport=recording, clock=clock)
    job_id = client.jobs.create("slow", timeout=timedelta(minutes=1), max_attempts=1).id
    started, finish = threading.Event(), threading.Event()
    told_to_stop: list[bool] = []

    @client.worker(names=["slow"], **FAST)
    def handle(job: HeldJob[Any]) -> str:
        started.set()
        finish.wait(PATIENCE_S)
        told_to_stop.append(job.signal.is_set())
        return "finished"

    with running(handle):
        assert started.wait(PATIENCE_S)
        first_lease = client.jobs.get(job_id).lease_until_ms
        for n in range(1, 7):  # three leases' time on the worker's clock, renewed at each half
            mark = clock.advance(31.0)
            eventually(lambda n=n, m=mark: len(touches(recording, job_id)) == n and clock.waiting_since(m))
        last_lease = client.jobs.get(job_id).lease_until_ms
        finish.set()
        job = settled(client, job_id)
    assert (job.status, job.result, job.attempt, job.failures) == ("completed", "finished", 1, 0)
    assert told_to_stop == [False]
    assert [o.get("status") for o in touches(recording, job_id)] == ["RUNNING"] * 6
    assert first_lease is not None and last_lease is not None and last_lease > first_lease
    client.close()


def test_cancelling_a_running_job_stops_its_handler_at_its_next_renewal_and_drops_its_result(
    dev: DevServer, space: str
) -> None:
    clock, recording = HandClock(), Recording()
    client = Emit(dev.url, dev.token, space, http_transport=recording, clock=clock)
    job_id = client.jobs.create("long", timeout=timedelta(minutes=1)).id  # renewed every 30 s
    started = threading.Event()
    stopped: list[str | None] = []

    @client.worker(names=["long"], **FAST)
    def handle(job: HeldJob[Any]) -> str:
        started.set()
        job.signal.wait(PATIENCE_S)
        stopped.append(job.stop_reason)
        job.log("info", "too late")
        return "a result nobody wants"

    with running(handle):
        assert started.wait(PATIENCE_S)
        [outcome] = client.jobs.cancel(job_id)
        # To the next renewal (its answer says the job is finished), again until it has come.
        eventually(lambda: stopped or (clock.advance(31.0), None)[1])
    # The worker has stopped: whatever it would have said after the refusal, it has said.

    assert outcome.status == "cancelled"
    assert stopped == ["finished"]
    job = client.jobs.get(job_id)
    assert (job.status, job.result, job.line_count) == ("cancelled", None, 0)
    reports = recording.about(job_id)
    refused = [
        i for i, (_, o) in enumerate(reports) if o.get("rejection", {}).get("reason") == "ALREADY_FINISHED"
    ]
    assert refused == [len(reports) - 1]  # the worker fell silent after the first refusal
    client.close()


def test_an_async_handler_is_cancelled_when_its_job_is(dev: DevServer, space: str) -> None:
    clock = HandClock()
    client = Emit(dev.url, dev.token, space, clock=clock)
    job_id = client.jobs.create("long", timeout=60).id
    started = threading.Event()
    cancelled: list[bool] = []

    @client.worker(names=["long"], **FAST)
    async def handle(job: HeldJob[Any]) -> str:
        started.set()
        try:
            await asyncio.sleep(PATIENCE_S)
        except asyncio.CancelledError:
            cancelled.append(job.signal.is_set())
            raise
        return "never"

    with running(handle):
        assert started.wait(PATIENCE_S)
        client.jobs.cancel(job_id)
        # To the next renewal, again until it has come: the worker may begin that wait only
        # after a first advance (a busy machine), and a wait begun later ends later.
        eventually(lambda: cancelled or (clock.advance(31.0), None)[1])
    assert cancelled == [True]
    assert client.jobs.get(job_id).status == "cancelled"
    client.close()


def test_it_claims_only_up_to_its_free_capacity(client: Emit) -> None:
    ids = [client.jobs.create("batch", i).id for i in range(4)]
    go = threading.Event()
    lock = threading.Lock()
    now_running: list[int] = [0, 0]  # running, most at once
    held = [0]  # claimed and not yet returned by its handler: the worker holds at least these
    over: list[tuple[int, int]] = []  # claims that asked for more than the free slots
    claim = client.jobs.claim

    def counted_claim(*, count: int, **kwargs: Any) -> list[emit.Claimed]:
        with lock:
            if count > 2 - held[0]:
                over.append((count, held[0]))
        got = claim(count=count, **kwargs)
        with lock:
            held[0] += len(got)
        return got

    client.jobs.claim = counted_claim  # type: ignore[method-assign]

    @client.worker(names=["batch"], concurrency=2, **FAST)
    def handle(job: HeldJob[int]) -> int:
        with lock:
            now_running[0] += 1
            now_running[1] = max(now_running)
        go.wait(PATIENCE_S)
        with lock:
            now_running[0] -= 1
            held[0] -= 1
        return job.payload

    with running(handle):
        eventually(lambda: len(list(client.jobs.list(status="running"))) == 2)
        # No wait for something not to happen: a claim sent while full is counted in
        # `over` whenever it comes (a greedy worker sends one at once, jobs are waiting).
        eventually(lambda: now_running[0] == 2)
        assert len(list(client.jobs.list(status="running"))) == 2
        assert len(list(client.jobs.list(status="pending"))) == 2
        go.set()
        results = [settled(client, job_id).result for job_id in ids]
    assert results == [0, 1, 2, 3]
    assert now_running[1] == 2
    assert over == [], "claimed more than its free slots (count asked, jobs held)"


def test_reports_and_claims_are_sent_again_across_transport_errors(dev: DevServer, space: str) -> None:
    # One retry in the transport: a report lost three times is also sent again by the worker.
    flaky = Flaky({("POST", "jobs:report"): 3, ("POST", "jobs:claim"): 1})
    client = Emit(dev.url, dev.token, space, http_transport=flaky, retries=1)
    job_id = client.jobs.create("n").id

    @client.worker(names=["n"], **FAST)
    def handle(job: HeldJob[Any]) -> str:
        job.log("info", "working")
        return "done"

    with running(handle):
        job = settled(client, job_id)
    assert (job.status, job.result, job.line_count) == ("completed", "done", 1)
    assert (
        sorted(flaky.failed)
        == [f"POST /v1/spaces/{space}/jobs:claim"] + [f"POST /v1/spaces/{space}/jobs:report"] * 3
    )
    client.close()


def test_what_a_handler_reports_is_checked_where_it_is_called(client: Emit) -> None:
    job_id = client.jobs.create("n").id
    problems: list[str] = []

    @client.worker(names=["n"], **FAST)
    def handle(job: HeldJob[Any]) -> str:
        for bad in (
            lambda: job.progress(101),
            lambda: job.log("loud", "x"),
            lambda: job.event(None),
            lambda: job.event({"big": "x" * 5000}),
            lambda: job.event({"not json": object()}),
        ):
            try:
                bad()
            except ValueError as exc:
                problems.append(str(exc).split(":")[0])
        job.log("info", "y" * 10_000)  # cut, not refused
        return "ok"

    with running(handle):
        job = settled(client, job_id)
    assert problems == ["progress", "log", "event", "event", "event"]
    assert job.status == "completed"
    [line] = client.jobs.lines(job_id)
    assert len(line.message) == 4_096


def test_an_async_handler_whose_own_cancellation_escapes_fails_its_attempt(client: Emit) -> None:
    job_id = client.jobs.create("n", max_attempts=1).id

    @client.worker(names=["n"], **FAST)
    async def handle(job: HeldJob[Any]) -> None:
        inner = asyncio.create_task(asyncio.sleep(10))
        inner.cancel()
        await inner  # raises CancelledError, though nobody cancelled the handler

    with running(handle):
        job = settled(client, job_id)
    assert (job.status, job.error) == ("failed", "the handler was cancelled")


def test_stop_does_not_wait_out_the_claims_long_poll(client: Emit) -> None:
    """A worker asked to stop while its claim waits (up to `poll_wait`) stops at once: the
    claim is let go (anything it still brings while handlers finish is released)."""
    job_id = client.jobs.create("quiet").id

    @client.worker(names=["quiet"], poll_wait=55)
    def quiet(job: HeldJob[Any]) -> None:
        return None

    thread = threading.Thread(target=quiet.run, name="test-worker", daemon=True)
    thread.start()
    settled(client, job_id)  # its first claim answered: the next one waits out its 55 s
    time.sleep(0.5)
    asked = time.monotonic()
    quiet.stop()
    thread.join(timeout=PATIENCE_S)
    assert not thread.is_alive()
    assert time.monotonic() - asked < 30  # not the poll's 55 s, however busy the machine
