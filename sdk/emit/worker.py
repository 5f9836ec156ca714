"""`@emit.worker`: claim jobs, run a handler on each, and report how it went.

The worker runs on an asyncio loop: `async def` handlers run there as tasks, plain
functions each on a thread of their own. It claims only as many jobs as it has free
slots, with a long poll, so it never holds work it cannot start. A `Reporter` renews
every hold and sends what handlers report. What a handler does decides the outcome:

| the handler           | the report                                   |
| --------------------- | -------------------------------------------- |
| returns a value       | `complete` with it as the result             |
| raises `Unrecoverable`| `fail`, unrecoverable                        |
| raises `RetryAfter`   | `fail` with `retryAfterMs`                   |
| raises `Release`      | `release`: back to the queue, not counted    |
| raises anything else  | `fail` with its type, message and traceback  |

The error of a handler's exception is `"Type: message"` then the last frames of its
traceback, within the 4 KiB the API keeps (`emit.results.describe`); `Unrecoverable`'s and
`RetryAfter`'s are their message alone.

Durations it takes (`lease`, `poll_wait`, `report_interval`, `grace`) are timedeltas or
seconds (`emit.units`). On `Emit` it makes its calls on threads, off its loop; on
`AsyncEmit`, on the loop itself. `serve(*workers)` runs several (one a task type, say) in
one process, on one loop, stopped together.

**Shutdown.** On SIGTERM or SIGINT (or `stop()`), the worker stops claiming, lets
running handlers finish for up to `grace`, then tells the rest to stop and
releases their jobs, so another worker takes them at once instead of after their lease.
An `at_most_once` job whose handler has started is never released (another worker
would run it a second time): it is failed for good, saying the worker stopped. Told
handlers get a few seconds more to return (what they return then is dropped), so the
process does not exit under them mid-step. A claim still waiting is let finish rather
than dropped: a claim whose answer is lost strands its jobs until their leases end. A
second signal stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeAlias

from emit import tracing
from emit._aio import in_thread
from emit.clock import Clock
from emit.control import Release, RetryAfter, Unrecoverable
from emit.errors import Internal, Unavailable
from emit.held import HeldJob
from emit.jobs import AsyncJobs
from emit.models import Claimed, Outcome
from emit.reporter import Hold, Reporter
from emit.results import describe
from emit.transport import Backoff
from emit.units import Duration, as_timedelta, optional_timedelta
from emit.wake import Waking

if TYPE_CHECKING:
    from emit.client import AsyncEmit, Emit

    AnyEmit: TypeAlias = Emit | AsyncEmit

log = logging.getLogger("emit.worker")

Handler = Callable[[HeldJob[Any]], Any]
"""A plain function or an `async def` taking the held job; what it returns is the result."""

MIN_LEASE_S = 1.0
MAX_LEASE_S = 43_200.0
FLUSH_TIMEOUT_S = 10.0
"""How long shutdown waits for its last reports (releases among them) to be answered."""
TOLD_TIMEOUT_S = 5.0
"""How long shutdown waits, once it has told the handlers still running to stop, for them
to return: a plain handler's thread cannot be stopped from outside, only let finish."""
WORKER_STOPPED = "the worker stopped before the handler finished (at most once: not retried)"
"""The error an `at_most_once` job whose handler was cut short by shutdown fails with."""


class Worker:
    """A handler with what it takes to serve it: start it with `run()`."""

    def __init__(
        self,
        handler: Handler,
        *,
        client: AnyEmit | Callable[[], AnyEmit],
        names: Sequence[str] | None = None,
        concurrency: int = 1,
        lease: Duration | None = None,
        poll_wait: Duration = 5.0,
        report_interval: Duration = 1.0,
        grace: Duration = 25.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency: must be at least 1")
        self.handler = handler
        self.names = list(names) if names else None
        self.concurrency = concurrency
        self.lease: timedelta | None = optional_timedelta(lease, "lease")
        """How long each claim holds a job; None: each job's own timeout."""
        self.poll_wait: timedelta = as_timedelta(poll_wait, "poll_wait")
        self.report_interval: timedelta = as_timedelta(report_interval, "report_interval")
        self.grace: timedelta = as_timedelta(grace, "grace")
        if self.lease is not None and not MIN_LEASE_S <= self.lease.total_seconds() <= MAX_LEASE_S:
            raise ValueError(
                f"lease: must be from {MIN_LEASE_S:g} to {MAX_LEASE_S:g} seconds, not {self.lease}"
            )
        if not 0 <= self.poll_wait.total_seconds() <= 60:
            raise ValueError(f"poll_wait: must be from 0 to 60 seconds, not {self.poll_wait}")
        # The loop's own arithmetic is in seconds, as the clock's is.
        self._lease_s = self.lease.total_seconds() if self.lease is not None else None
        self._grace_s = self.grace.total_seconds()
        self._client = client
        self._is_async = inspect.iscoroutinefunction(handler)
        functools.update_wrapper(self, handler)  # type: ignore[arg-type]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested = threading.Event()
        self._stopping = asyncio.Event()
        self._forced = asyncio.Event()
        self._late_claim: asyncio.Future[list[Claimed]] | None = None
        """The claim that was waiting when the worker began to stop (`_let_go`)."""
        self._running: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._slot = asyncio.Event()
        self._waking: Waking | None = None

    @property
    def listening(self) -> bool:
        """Whether it hears of work over the service's WebSocket now (else it long-polls)."""
        return self._waking is not None and self._waking.listening

    def __repr__(self) -> str:
        return f"<emit worker {getattr(self.handler, '__qualname__', self.handler)!r} names={self.names}>"

    # -- starting and stopping ------------------------------------------------------

    def run(self) -> None:
        """Work until SIGTERM or SIGINT (or `stop()`), then shut down gracefully.

        Signals are handled when called from the main thread; elsewhere, use `stop()`."""
        log_unless_configured()
        asyncio.run(self.serve(handle_signals=threading.current_thread() is threading.main_thread()))

    def stop(self) -> None:
        """Ask the worker to shut down, from any thread: like a signal, a second call
        stops at once instead of waiting for running handlers."""
        loop = self._loop
        if loop is None:
            self._stop_requested.set()
            return
        with contextlib.suppress(RuntimeError):  # the loop has just closed: it is stopped already
            loop.call_soon_threadsafe(self._on_stop)

    def _on_stop(self) -> None:
        if self._stopping.is_set():
            log.info("stopping at once")
            self._forced.set()
            return
        log.info(
            "stopping: no more claims; %d running job(s) get up to %.0fs (signal again to stop at once)",
            len(self._running),
            self._grace_s,
        )
        self._stopping.set()

    # -- the loop ---------------------------------------------------------------------

    async def serve(self, *, handle_signals: bool = False) -> None:
        """The worker as a coroutine, for an event loop of one's own (`serve(*workers)` runs
        several together)."""
        owned = callable(self._client)  # made here from the environment: closed here too
        client = self._client() if callable(self._client) else self._client
        self._loop = asyncio.get_running_loop()
        self._stopping, self._forced, self._slot = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._running = {}
        if self._stop_requested.is_set():
            self._stopping.set()
        clock = client.clock
        port = _Port(client)
        interval = self.report_interval.total_seconds()
        reporter = Reporter(port.report, interval=interval, clock=clock)
        log.info(
            "worker %s started: names %s, concurrency %d, space %s",
            getattr(self.handler, "__qualname__", self.handler),
            ", ".join(self.names) if self.names else "(every name)",
            self.concurrency,
            client.space,
        )
        reporting = asyncio.create_task(reporter.run(), name="emit-reporter")
        reporting.add_done_callback(self._reporter_ended)
        restore = _install_signals(self._on_stop) if handle_signals else []
        try:
            await self._claim_until_stopped(client, port, reporter, clock)
        except BaseException:
            self._stopping.set()
            self._forced.set()
            raise
        finally:
            try:
                await self._drain(reporter, clock)
                await self._let_go(port)
                reporter.close()
                await _finish(reporting, FLUSH_TIMEOUT_S, clock)
            finally:
                for undo in restore:
                    undo()
                if owned:
                    await port.close()
                self._loop = None
                self._stop_requested.clear()

    async def _claim_until_stopped(
        self, client: AnyEmit, port: _Port, reporter: Reporter, clock: Clock
    ) -> None:
        # Claims wait for hints over the WebSocket when they can, else long-poll (emit.wake).
        waking = Waking(
            space=client.space,
            names=self.names,
            authorization=client.authorization,
            clock=clock,
            poll_wait=self.poll_wait.total_seconds(),
        )
        self._waking = waking
        try:
            await self._claim_while_running(client, port, reporter, clock, waking)
        finally:
            await waking.close()
            self._waking = None

    async def _claim_while_running(
        self, client: AnyEmit, port: _Port, reporter: Reporter, clock: Clock, waking: Waking
    ) -> None:
        backoff, failures = Backoff(first=0.5, most=10.0), 0
        while not self._stopping.is_set():
            free = self.concurrency - len(self._running)
            if free <= 0:
                self._slot.clear()
                await _first(self._slot.wait(), self._stopping.wait())
                continue
            wait = await waking.before_claim(self._stopping)
            if wait is None:
                continue
            claim = port.claim(count=free, names=self.names, wait=wait, lease=self.lease)
            try:
                if not await _before(claim, self._stopping):
                    # Stopping while the claim waits: no waiting out its long poll. What it
                    # still brings while running handlers finish is released (`_let_go`).
                    self._late_claim = claim
                    return
                claimed = claim.result()
            except (Unavailable, Internal) as exc:
                failures += 1
                wait = backoff.wait(failures)
                log.warning("claim failed (%s: %s); trying again in %.1fs", exc.code, exc, wait)
                await _first(clock.wait(wait), self._stopping.wait())
                continue
            failures = 0
            waking.after_claim(asked=free, got=len(claimed), wake_url=client.jobs.wake_url)
            # Wall time to read the lease's end against; the clock's time to schedule renewals.
            received = (time.time(), clock.monotonic())
            for job in claimed:
                log.info("claimed job %s (%s) attempt %d", job.id, job.name, job.attempt)
                self._start(job, client, reporter, received)

    def _start(
        self, claimed: Claimed, client: AnyEmit, reporter: Reporter, received: tuple[float, float]
    ) -> None:
        job: HeldJob[Any] = HeldJob(
            id=claimed.id,
            name=claimed.name,
            attempt=claimed.attempt,
            payload=claimed.payload,
            space=client.space or "",
            guarantee=claimed.guarantee,
            traceparent=claimed.traceparent,
            max_attempts=claimed.max_attempts,
            failures=claimed.failures,
        )
        lease, remaining, touch = self._lease_of(claimed, received[0])
        key = (claimed.id, claimed.attempt)
        hold = Hold(
            job=job,
            lease=lease,
            touch=touch,
            next_touch=received[1] + remaining / 2,
            deadline=received[1] + remaining,
            on_lost=lambda reason: self._lost(key, job, reason),
        )
        reporter.add(hold)
        if self._stopping.is_set():  # claimed while shutting down: give it straight back
            job.stop("shutdown")
            reporter.end(hold, {"release": {}})
            return
        self._running[key] = asyncio.create_task(self._work(hold, reporter), name=f"emit-job-{claimed.id}")

    def _lease_of(self, claimed: Claimed, received_at: float) -> tuple[float, float, dict[str, Any]]:
        """The lease a renewal gives, what is left of this one, and the touch that renews it.

        With `lease` set, the worker asks for it by name. Otherwise each job is held for
        its own timeout, which the claim's answer does not state: `touch: {}` renews for
        exactly that, and its length is read off `leaseUntilMs` (assuming clocks kept in
        step, as leases in seconds require anyway)."""
        remaining = min(max(claimed.lease_until_ms / 1000 - received_at, MIN_LEASE_S / 2), MAX_LEASE_S)
        if self._lease_s is not None:
            return self._lease_s, min(remaining, self._lease_s), {"leaseMs": round(self._lease_s * 1000)}
        stated = claimed.raw.get("leaseMs") or claimed.raw.get("timeoutMs")
        if isinstance(stated, int):
            return stated / 1000, min(remaining, stated / 1000), {"leaseMs": stated}
        return max(remaining, MIN_LEASE_S), remaining, {}

    def _lost(self, key: tuple[str, int], job: HeldJob[Any], reason: str) -> None:
        """The attempt is not ours any more: tell the handler, and cancel it if it can be."""
        log.info("job %s attempt %s: stopping its handler (%s)", job.id, job.attempt, reason)
        job.stop(reason)
        task = self._running.get(key)
        if task is not None and self._is_async:
            task.cancel()

    async def _work(self, hold: Hold, reporter: Reporter) -> None:
        key = (hold.job.id, hold.job.attempt)
        try:
            ending = await self._call(hold.job)
        except asyncio.CancelledError:
            if not hold.job.signal.is_set():
                raise
            return  # told to stop: whatever it would have said is dropped
        finally:
            self._running.pop(key, None)
            self._slot.set()
        reporter.end(hold, ending)

    async def _call(self, job: HeldJob[Any]) -> dict[str, Any]:
        """Run the handler (in its span, `emit.tracing`); its return or exception becomes the
        attempt's last report."""
        try:
            with tracing.handler_span(job):
                if self._is_async:
                    result = await self.handler(job)
                else:
                    # The thread is given this task's context: the handler's span is current there.
                    result = await in_thread(functools.partial(self.handler, job), name=f"emit-job-{job.id}")
        except Release:
            return {"release": {}}
        except Unrecoverable as exc:
            return {"fail": {"error": _message(exc), "unrecoverable": True}}
        except RetryAfter as exc:
            return {"fail": {"error": _message(exc), "retryAfterMs": round(exc.after.total_seconds() * 1000)}}
        except Exception as exc:
            log.warning("job %s attempt %s failed", job.id, job.attempt, exc_info=exc)
            return {"fail": {"error": describe(exc)}}
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # this worker, or whoever runs it, cancelled it
                raise
            # The handler let a cancellation of its own escape: an attempt that failed.
            return {"fail": {"error": "the handler was cancelled"}}
        try:
            json.dumps(result, allow_nan=False)
        except (TypeError, ValueError) as exc:
            return {"fail": {"error": f"the handler's result is not JSON: {exc}", "unrecoverable": True}}
        return {"complete": {"result": result}}

    async def _drain(self, reporter: Reporter, clock: Clock) -> None:
        """Give running handlers the grace period, then stop the rest and release their jobs
        (an `at_most_once` job whose handler started fails for good instead), and give the
        told handlers a bounded while to return."""
        if self._running and not self._forced.is_set():
            waiting = asyncio.gather(*self._running.values(), return_exceptions=True)
            await _first(asyncio.shield(waiting), clock.wait(self._grace_s), self._forced.wait())
        for hold in reporter.holds():
            if hold.ended:
                continue
            key = (hold.job.id, hold.job.attempt)
            started = key in self._running
            self._lost(key, hold.job, "shutdown")
            if started and hold.job.guarantee == "at_most_once":
                log.warning("job %s attempt %s: failing it (at most once; shutting down)", *key)
                reporter.end(hold, {"fail": {"error": WORKER_STOPPED, "unrecoverable": True}})
            else:
                log.info("job %s attempt %s: releasing it (shutting down)", *key)
                reporter.end(hold, {"release": {}})
        if self._running and not self._forced.is_set():
            # Their last words are said (released or failed): whatever they return is dropped.
            told = asyncio.gather(*self._running.values(), return_exceptions=True)
            await _first(asyncio.shield(told), clock.wait(TOLD_TIMEOUT_S), self._forced.wait())

    async def _let_go(self, port: _Port) -> None:
        """The claim that was waiting when the worker began to stop: if it has answered (while
        handlers finished), its jobs are released, claimable again at once; if not, it is let
        go (a job it might still be handed waits for its lease, as an SQS message received
        by a consumer that quit waits for its visibility timeout)."""
        late, self._late_claim = self._late_claim, None
        if late is None:
            return
        if not late.done():
            late.cancel()
            return
        if late.cancelled() or late.exception() is not None:
            return
        jobs: list[Claimed] = late.result()
        if jobs:
            log.info("releasing %d job(s) claimed as the worker stopped", len(jobs))
            with contextlib.suppress(Exception):  # their leases end them otherwise
                await port.report([{"id": j.id, "attempt": j.attempt, "release": {}} for j in jobs])

    def _reporter_ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("the reporter stopped", exc_info=task.exception())
            self._stopping.set()
            self._forced.set()


async def serve(*workers: Worker, handle_signals: bool | None = None) -> None:
    """Run `workers` together on the running loop (one for each task type, say), until
    SIGTERM or SIGINT, or until each is stopped (`worker.stop()`); each shuts down as its
    own `serve` does, gracefully, and a second signal stops them all at once.

    `handle_signals`: by default, when called from the main thread. If one worker fails,
    the others are stopped gracefully and its error is raised."""
    _check_served(workers)
    if handle_signals is None:
        handle_signals = threading.current_thread() is threading.main_thread()
    tasks = [asyncio.create_task(w.serve(), name=f"emit-{w!r}") for w in workers]

    def on_signal() -> None:
        for worker in workers:
            worker._on_stop()

    restore = _install_signals(on_signal) if handle_signals else []
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        if pending:  # one failed: the others stop as on a signal
            for worker in workers:
                worker.stop()
            await asyncio.wait(pending)
        for task in tasks:
            task.result()
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        for undo in restore:
            undo()


def _check_served(workers: Sequence[Worker]) -> None:
    if not workers:
        raise ValueError("serve: give at least one worker")
    if len({id(w) for w in workers}) != len(workers):
        raise ValueError("serve: each worker once")


def run(*workers: Worker) -> None:
    """`serve(*workers)` on an event loop of its own: blocks until they have stopped."""
    log_unless_configured()
    asyncio.run(serve(*workers))


def log_unless_configured() -> None:
    """A worker run as a program says what it does (that it started, what it claims, how it
    stops), as Celery's and RQ's do: unless the application has set up logging, emit's
    INFO lines go to stderr. `serve()` inside an application leaves logging to it."""
    emit_log = logging.getLogger("emit")
    if logging.getLogger().handlers or emit_log.handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    emit_log.addHandler(handler)
    emit_log.setLevel(logging.INFO)


def _install_signals(on_signal: Callable[[], None]) -> list[Callable[[], object]]:
    loop = asyncio.get_running_loop()
    undo: list[Callable[[], object]] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, on_signal)
            undo.append(functools.partial(loop.remove_signal_handler, sig))
        except (NotImplementedError, RuntimeError):  # no loop signal handlers (Windows)
            previous = signal.signal(sig, lambda *_: loop.call_soon_threadsafe(on_signal))
            undo.append(functools.partial(signal.signal, sig, previous))
    return undo


def _message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class _Port:
    """The worker's two calls (claim, report) on either client, awaited: the blocking
    client's each on a thread of its own, the async client's on the loop."""

    def __init__(self, client: AnyEmit) -> None:
        self._client = client

    def claim(
        self, *, count: int, names: list[str] | None, wait: float, lease: timedelta | None
    ) -> asyncio.Future[list[Claimed]]:
        jobs = self._client.jobs
        if isinstance(jobs, AsyncJobs):
            return asyncio.ensure_future(jobs.claim(count=count, names=names, wait=wait, lease=lease))
        call = functools.partial(jobs.claim, count=count, names=names, wait=wait, lease=lease)
        return in_thread(call, name="emit-claim")

    async def report(self, bodies: list[dict[str, Any]]) -> list[Outcome]:
        jobs = self._client.jobs
        if isinstance(jobs, AsyncJobs):
            return await jobs.report(bodies)
        return await in_thread(functools.partial(jobs.report, bodies), name="emit-report")

    async def close(self) -> None:
        client = self._client
        if isinstance(client.jobs, AsyncJobs):
            await client.aclose()
        else:
            client.close()


async def _first(*waits: Any) -> None:
    """Wait for the first of several awaitables, and cancel the rest."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
    for task in done:
        task.result()


async def _before(work: asyncio.Future[Any], stop: asyncio.Event) -> bool:
    """Whether `work` is done before `stop` is set (it is left running if not)."""
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([work, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    return work.done()


async def _finish(task: asyncio.Task[None], timeout: float, clock: Clock) -> None:
    timer = asyncio.ensure_future(clock.wait(timeout))
    try:
        await asyncio.wait([task, timer], return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
    if not task.done():
        log.warning("some last reports were not answered within %.0fs; giving up on them", timeout)
        task.cancel()
