"""`Emit`: the client, and `worker`, the decorator that turns a function into a worker."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Self

import httpx

from emit.clock import SYSTEM, Clock
from emit.jobs import Jobs
from emit.names import NameDiagnostics, Names
from emit.schedules import Schedules
from emit.spaces import Spaces
from emit.tokens import Tokens
from emit.transport import Backoff, Transport
from emit.worker import Handler, Worker

DEFAULT_ROOM_WAIT_S = 60.0
DEFAULT_TIMEOUT_S = 30.0


class Emit:
    """A client for one emit API, bound to one space.

    `url`, `token` and `space` default to `EMIT_URL`, `EMIT_TOKEN` and `EMIT_SPACE`.
    A call refused because the space is full (429) is sent again as the answer says,
    for up to `room_wait` seconds. A call without an answer, or answered with a 5xx, is
    sent again up to `retries` times with backoff when repeating it is harmless.
    Every wait (for room, between tries, `jobs.follow`'s polls, its workers' rounds) goes
    through `clock`: the real one unless a test gives one of its own.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        space: str | None = None,
        *,
        room_wait: float = DEFAULT_ROOM_WAIT_S,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = 4,
        http_transport: httpx.BaseTransport | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        url = url or os.environ.get("EMIT_URL")
        token = token or os.environ.get("EMIT_TOKEN")
        if not url:
            raise ValueError(
                "no URL: pass url= to Emit(), or set EMIT_URL (`make dev`: http://127.0.0.1:8787)"
            )
        if not token:
            raise ValueError("no token: pass token= to Emit(), or set EMIT_TOKEN")
        self.space = space or os.environ.get("EMIT_SPACE") or None
        self._transport = Transport(
            url,
            token,
            room_wait=room_wait,
            timeout=timeout,
            backoff=Backoff(tries=retries + 1),
            http_transport=http_transport,
            clock=clock,
        )
        self._bind()

    def _bind(self) -> None:
        self.jobs = Jobs(self._transport, self.space)
        self.names = Names(self._transport, self.space)
        self.schedules = Schedules(self._transport, self.space)
        self.spaces = Spaces(self._transport, self.space)
        self.tokens = Tokens(self._transport)

    @property
    def url(self) -> str:
        return self._transport.url

    @property
    def authorization(self) -> str:
        """The `Authorization` header every call sends (the worker's wake sends it too)."""
        return str(self._transport.authorization)

    def diagnostics(self) -> list[NameDiagnostics]:
        """Each job name of the space with pending jobs or a policy of its own: counts, the
        policy in force, and why its jobs wait (`names.diagnostics`)."""
        return self.names.diagnostics()

    @property
    def clock(self) -> Clock:
        return self._transport.clock

    def with_space(self, space: str) -> Emit:
        """The same client, connection included, bound to another space."""
        other = object.__new__(Emit)
        other.space = space
        other._transport = self._transport
        other._bind()
        return other

    def worker(
        self,
        *,
        names: Sequence[str] | None = None,
        concurrency: int = 1,
        lease: float | None = None,
        poll_wait: float = 5.0,
        report_interval: float = 1.0,
        grace: float = 25.0,
    ) -> Callable[[Handler], Worker]:
        """Make the decorated function a worker for jobs of `names` in this client's space.

        `concurrency` handlers run at once. Each job is held for its own timeout unless
        `lease` (seconds) says otherwise, and renewed at half of it. `poll_wait` is how
        long a claim waits for work; `report_interval` how often buffered progress, lines
        and events are sent; `grace` how long running handlers get at shutdown.
        """

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


def worker(
    *,
    names: Sequence[str] | None = None,
    concurrency: int = 1,
    client: Emit | None = None,
    lease: float | None = None,
    poll_wait: float = 5.0,
    report_interval: float = 1.0,
    grace: float = 25.0,
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
