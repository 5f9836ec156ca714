"""`Emit` and `AsyncEmit`: the client, blocking or on an event loop; and `worker`, the
decorator that turns a function into a worker.

Both clients have the same resources (`jobs`, `names`, `schedules`, `spaces`, `tokens`)
made from the same flows (`emit.calls`), so a call means the same on either; only the
transport differs (httpx's `Client` or its `AsyncClient`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from emit.clock import SYSTEM, Clock
from emit.jobs import AsyncJobs, Jobs
from emit.names import AsyncNames, NameDiagnostics, Names
from emit.schedules import AsyncSchedules, Schedules
from emit.spaces import AsyncSpaces, Spaces
from emit.tasks import AsyncTask, Task
from emit.tokens import AsyncTokens, Tokens
from emit.transport import AsyncTransport, Backoff, Transport
from emit.units import Duration, seconds
from emit.worker import Handler, Worker, serve

M = TypeVar("M")

DEFAULT_ROOM_WAIT_S = 60.0
DEFAULT_TIMEOUT_S = 30.0


def _where(url: str | None, token: str | None) -> tuple[str, str]:
    url = url or os.environ.get("EMIT_URL")
    token = token or os.environ.get("EMIT_TOKEN")
    if not url:
        raise ValueError("no URL: pass url= to Emit(), or set EMIT_URL (`make dev`: http://127.0.0.1:8787)")
    if not token:
        raise ValueError("no token: pass token= to Emit(), or set EMIT_TOKEN")
    return url, token


class Emit:
    """A client for one emit API, bound to one space; each call blocks until answered.

    `url`, `token` and `space` default to `EMIT_URL`, `EMIT_TOKEN` and `EMIT_SPACE`.
    A call refused because the space is full (429) is sent again as the answer says,
    for up to `room_wait` (a timedelta, or seconds). A call without an answer, or
    answered with a 5xx, is sent again up to `retries` times with backoff when repeating
    it is harmless. `timeout` is each HTTP request's. Every wait (for room, between tries,
    `jobs.follow`'s polls, its workers' rounds) goes through `clock`: the real one unless
    a test gives one of its own. `AsyncEmit` is the same client for an event loop.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        space: str | None = None,
        *,
        room_wait: Duration = DEFAULT_ROOM_WAIT_S,
        timeout: Duration = DEFAULT_TIMEOUT_S,
        retries: int = 4,
        http_transport: httpx.BaseTransport | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        url, token = _where(url, token)
        self.space = space or os.environ.get("EMIT_SPACE") or None
        self._transport = Transport(
            url,
            token,
            room_wait=seconds(room_wait, "room_wait"),
            timeout=seconds(timeout, "timeout"),
            backoff=Backoff(tries=retries + 1),
            http_transport=http_transport,
            clock=clock,
        )
        self._bind()

    def _bind(self) -> None:
        self._jobs = Jobs(self._transport, self.space)
        self._names = Names(self._transport, self.space)
        self._schedules = Schedules(self._transport, self.space)
        self._spaces = Spaces(self._transport, self.space)
        self._tokens = Tokens(self._transport)

    @property
    def jobs(self) -> Jobs:
        """The space's jobs: `create`, `create_many`, `get`, `list`, `lines`, `events`,
        `follow`, `follow_link`, `cancel`, `retry`; `claim` and `report` for a worker loop."""
        return self._jobs

    @property
    def names(self) -> Names:
        """Flow control per job name: `policy`, `update`, `pause`, `resume`, `reset`,
        `diagnostics`."""
        return self._names

    @property
    def schedules(self) -> Schedules:
        """The space's cron schedules: `put`, `get`, `list`, `update`, `pause`, `resume`,
        `trigger`, `delete`."""
        return self._schedules

    @property
    def spaces(self) -> Spaces:
        """Space settings (admin): `get`, `update`, `list`, notices, defaults per name."""
        return self._spaces

    @property
    def tokens(self) -> Tokens:
        """API tokens (admin): `create`, `list`, `revoke`."""
        return self._tokens

    @property
    def url(self) -> str:
        return self._transport.url

    @property
    def authorization(self) -> str:
        """The `Authorization` header every call sends (the worker's wake sends it too)."""
        return str(self._transport.authorization)

    @property
    def clock(self) -> Clock:
        return self._transport.clock

    def diagnostics(self) -> list[NameDiagnostics]:
        """Each job name of the space with pending jobs or a policy of its own: counts, the
        policy in force, and why its jobs wait (`names.diagnostics`)."""
        return self.names.diagnostics()

    def with_space(self, space: str) -> Emit:
        """The same client, connection included, bound to another space."""
        other = object.__new__(Emit)
        other.space = space
        other._transport = self._transport
        other._bind()
        return other

    def task(
        self,
        name: str,
        *,
        payload: type[M] | None = None,
        max_attempts: int | None = None,
        timeout: Duration | None = None,
        **defaults: Any,
    ) -> Task[M]:
        """A task: the job name `name`, its payload's type (a pydantic model or a dataclass;
        None: JSON as given) and create options every job of it gets unless its enqueue
        says otherwise (`max_attempts`, `timeout`, and `backoff`, `delay`, `priority`,
        `concurrency_key`, `guarantee`, `callback`, `expires_in`). Share it between the
        code that enqueues (`task.enqueue(payload)`) and the worker (`@task.worker()`),
        so the name is written once (`emit.tasks`)."""
        return Task(self, name, payload, max_attempts=max_attempts, timeout=timeout, **defaults)

    def worker(
        self,
        *,
        names: Sequence[str] | None = None,
        concurrency: int = 1,
        lease: Duration | None = None,
        poll_wait: Duration = 5.0,
        report_interval: Duration = 1.0,
        grace: Duration = 25.0,
    ) -> Callable[[Handler], Worker]:
        """Make the decorated function a worker for jobs of `names` in this client's space.

        `concurrency` handlers run at once. Each job is held for its own timeout unless
        `lease` says otherwise, and renewed at half of it. `poll_wait` is how long a claim
        waits for work; `report_interval` how often buffered progress, lines and events
        are sent; `grace` how long running handlers get at shutdown. Durations are
        timedeltas or seconds."""
        return worker(
            names=names,
            concurrency=concurrency,
            client=self,
            lease=lease,
            poll_wait=poll_wait,
            report_interval=report_interval,
            grace=grace,
        )

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class AsyncEmit:
    """`Emit` for an event loop (httpx's `AsyncClient`): the same resources and calls,
    awaited (`await client.jobs.create(...)`), with listings as async iterators (`async
    for job in client.jobs.list()`). Its workers make their calls on the loop, and
    `serve(*workers)` runs several of them in one process:

        client = emit.AsyncEmit(space="billing")

        @client.worker(names=["charge-invoice"], concurrency=8)
        async def charge(job: emit.HeldJob) -> dict: ...

        @client.worker(names=["send-receipt"])
        async def receipt(job: emit.HeldJob) -> None: ...

        await client.serve(charge, receipt)   # until SIGTERM or SIGINT

    Its waits go through `clock.wait`; close it with `await client.aclose()` or `async with`.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        space: str | None = None,
        *,
        room_wait: Duration = DEFAULT_ROOM_WAIT_S,
        timeout: Duration = DEFAULT_TIMEOUT_S,
        retries: int = 4,
        http_transport: httpx.AsyncBaseTransport | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        url, token = _where(url, token)
        self.space = space or os.environ.get("EMIT_SPACE") or None
        self._transport = AsyncTransport(
            url,
            token,
            room_wait=seconds(room_wait, "room_wait"),
            timeout=seconds(timeout, "timeout"),
            backoff=Backoff(tries=retries + 1),
            http_transport=http_transport,
            clock=clock,
        )
        self._bind()

    def _bind(self) -> None:
        self._jobs = AsyncJobs(self._transport, self.space)
        self._names = AsyncNames(self._transport, self.space)
        self._schedules = AsyncSchedules(self._transport, self.space)
        self._spaces = AsyncSpaces(self._transport, self.space)
        self._tokens = AsyncTokens(self._transport)

    @property
    def jobs(self) -> AsyncJobs:
        """The space's jobs, as `Emit.jobs`, awaited."""
        return self._jobs

    @property
    def names(self) -> AsyncNames:
        """Flow control per job name, as `Emit.names`, awaited."""
        return self._names

    @property
    def schedules(self) -> AsyncSchedules:
        """The space's cron schedules, as `Emit.schedules`, awaited."""
        return self._schedules

    @property
    def spaces(self) -> AsyncSpaces:
        """Space settings (admin), as `Emit.spaces`, awaited."""
        return self._spaces

    @property
    def tokens(self) -> AsyncTokens:
        """API tokens (admin), as `Emit.tokens`, awaited."""
        return self._tokens

    @property
    def url(self) -> str:
        return self._transport.url

    @property
    def authorization(self) -> str:
        """The `Authorization` header every call sends (the worker's wake sends it too)."""
        return str(self._transport.authorization)

    @property
    def clock(self) -> Clock:
        return self._transport.clock

    async def diagnostics(self) -> list[NameDiagnostics]:
        """As `Emit.diagnostics`."""
        return await self.names.diagnostics()

    def with_space(self, space: str) -> AsyncEmit:
        """The same client, connection included, bound to another space."""
        other = object.__new__(AsyncEmit)
        other.space = space
        other._transport = self._transport
        other._bind()
        return other

    def task(
        self,
        name: str,
        *,
        payload: type[M] | None = None,
        max_attempts: int | None = None,
        timeout: Duration | None = None,
        **defaults: Any,
    ) -> AsyncTask[M]:
        """As `Emit.task`; its `enqueue` is awaited, as are its runs' `get` and `result`."""
        return AsyncTask(self, name, payload, max_attempts=max_attempts, timeout=timeout, **defaults)

    def worker(
        self,
        *,
        names: Sequence[str] | None = None,
        concurrency: int = 1,
        lease: Duration | None = None,
        poll_wait: Duration = 5.0,
        report_interval: Duration = 1.0,
        grace: Duration = 25.0,
    ) -> Callable[[Handler], Worker]:
        """As `Emit.worker`; the worker's claims and reports are made on its loop."""

        def decorate(handler: Handler) -> Worker:
            return Worker(
                handler,
                client=self,
                names=names,
                concurrency=concurrency,
                lease=lease,
                poll_wait=poll_wait,
                report_interval=report_interval,
                grace=grace,
            )

        return decorate

    async def serve(self, *workers: Worker, handle_signals: bool | None = None) -> None:
        """Run `workers` together on this loop until SIGTERM or SIGINT (`emit.serve`)."""
        await serve(*workers, handle_signals=handle_signals)

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()


def worker(
    *,
    names: Sequence[str] | None = None,
    concurrency: int = 1,
    client: Emit | AsyncEmit | None = None,
    lease: Duration | None = None,
    poll_wait: Duration = 5.0,
    report_interval: Duration = 1.0,
    grace: Duration = 25.0,
) -> Callable[[Handler], Worker]:
    """`@emit.worker(names=[...])`: a worker on `client`, or on `Emit()` from the environment
    (`EMIT_URL`, `EMIT_TOKEN`, `EMIT_SPACE`), made when it starts rather than at import."""

    def decorate(handler: Handler) -> Worker:
        return Worker(
            handler,
            client=client if client is not None else Emit,
            names=names,
            concurrency=concurrency,
            lease=lease,
            poll_wait=poll_wait,
            report_interval=report_interval,
            grace=grace,
        )

    return decorate
