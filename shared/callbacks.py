"""Callbacks: what is POSTed when a job finishes, how it is signed, where it may go, and
how often it is tried.

A delivery is tried as soon as the stream shows the job finished, then again after 5 s,
doubling to at most an hour apart, until a day has passed since the first try. Any
answer but 2xx, or none within 10 s in all, is a failed try. One sender holds an
attempt at a time; one that crashes mid-send lets its hold run out, and the attempt is
made again (at least once, where a crash leaves no record).

Sending is work of its own: the stream and the clock only hand due deliveries to an
`Outbox` (`shared.outbox`: an SQS queue read by the sender function on AWS, `emit dev`'s
own sender threads locally), so a target that never answers holds up its own space's
deliveries, never the stream's records or the clock's ticks.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from shared import limits
from shared.clock import Clock
from shared.job import Job, JobStatus
from shared.spaces import SpaceSettings
from shared.store.port import CALLBACK, Attempt, DeliveryStorePort, JobStorePort, Snapshot, Timer
from shared.targets import TargetPolicy, TargetRefused
from shared.timers import Timers

FIRST_RETRY_MS = 5 * limits.SECOND_MS
MAX_RETRY_MS = limits.HOUR_MS
GIVE_UP_AFTER_MS = limits.DAY_MS
SEND_DEADLINE_S = 10.0
"""A try is over by then, whatever the target does: resolving its name, connecting, TLS,
sending the body and receiving the answer's status and headers, in all."""
HOLD_MS = 60 * limits.SECOND_MS
"""How long one sender holds an attempt: well past the send's deadline and the writes
around it, so two senders never hold one delivery at once."""
CONCURRENT_SENDS = 32
"""Sends in flight at once, per batch (one sender invocation's messages: at most ten from
SQS, or `emit dev`'s room for one space); the others wait for a slot before taking their hold."""
SIGNATURE_HEADER = "Emit-Signature"


def sign(secret: str, t_ms: int, body: bytes) -> str:
    """`t=<ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as the contract gives it."""
    digest = hmac.new(secret.encode(), f"{t_ms}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t_ms},v1={digest}"


def body(job: Job) -> bytes:
    """The callback's JSON body; the same bytes on every try of one delivery."""
    content: dict[str, Any] = {
        "jobId": job.id,
        "space": job.space,
        "name": job.name,
        "status": job.status.value.lower(),
        "attempt": job.attempt,
        "timestamp": job.finished_at_ms,
        "result": job.result if job.status == JobStatus.COMPLETED else job.error,
    }
    return json.dumps(content, separators=(",", ":")).encode()


def retry_wait_ms(attempts: int) -> int:
    """After the n-th failed try: 5 s, 10 s, 20 s, ... at most an hour."""
    return int(min(FIRST_RETRY_MS * 2 ** min(attempts - 1, 20), MAX_RETRY_MS))


Due = tuple[str, str] | tuple[str, str, Snapshot]
"""A delivery to try: (space, job id), with the finished job as a stream record showed it
when it is at hand (a finished job never changes: the copy is the job)."""


class Outbox(Protocol):
    """Where the stream and the clock hand over the deliveries they made due: the sender
    takes each one's hold before it sends, so a delivery handed over twice is sent once."""

    def submit(self, dues: Sequence[Due]) -> None: ...


@dataclass(frozen=True)
class Held:
    """An attempt one sender holds: the delivery's attempt as taken, and the job to send
    (None: the job is gone) with its space's signing secret."""

    space: str
    job_id: str
    attempt: Attempt
    job: Job | None
    secret: str | None


class Dispatcher:
    """Makes delivery attempts and records what came of them.

    Sends run side by side in one event loop, each under a total deadline that cancels
    whatever it is blocked on (a name lookup, a connect, a TLS handshake, a target that
    drips its answer a byte at a time): a slow target holds up no other, and no send
    outlives the hold on its attempt, so two sends of one delivery never overlap."""

    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStorePort,
        deliveries: DeliveryStorePort,
        settings: SpaceSettings,
        policy: TargetPolicy,
        transport: httpx.AsyncBaseTransport | None = None,
        send_deadline_s: float = SEND_DEADLINE_S,
        timers: Timers,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.deliveries = deliveries
        self.settings = settings
        self.policy = policy
        self.transport = transport
        """None: the network; tests put a mock here."""
        self.send_deadline_s = send_deadline_s
        self.timers = timers
        """Where a try put off is filed, for the clock to hand it over when it is due."""

    def dispatch_many(self, targets: Sequence[Due]) -> list[str]:
        """Try each delivery that is due, if nobody else holds it; answers their states.

        A target's third element is the finished job when the caller has it (the stream
        record that finished it carries it, and a finished job never changes); else it is
        read."""
        states: list[str] = []
        for outcome in self.dispatch_each(targets):
            if isinstance(outcome, BaseException):
                raise outcome  # after every other attempt has been made and recorded
            states.append(outcome)
        return states

    def dispatch_each(self, targets: Sequence[Due]) -> list[str | BaseException]:
        """Like `dispatch_many`, but answers each target's own outcome: its state, or the
        exception that kept its attempt from being made or recorded (the table failed)."""
        if not targets:
            return []
        loop = asyncio.new_event_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=16, thread_name_prefix="emit-callbacks"))
        try:
            return loop.run_until_complete(self._dispatch_all(targets))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            # Closing does not wait for a name lookup abandoned at its deadline (a thread
            # cannot be cancelled); asyncio.run would.
            loop.close()

    async def _dispatch_all(self, targets: Sequence[Due]) -> list[str | BaseException]:
        slots = asyncio.Semaphore(CONCURRENT_SENDS)
        async with httpx.AsyncClient(
            transport=self.transport, follow_redirects=False, timeout=self.send_deadline_s
        ) as client:
            return await asyncio.gather(
                *(self._dispatch(client, slots, target) for target in targets), return_exceptions=True
            )

    async def _dispatch(self, client: httpx.AsyncClient, slots: asyncio.Semaphore, target: Due) -> str:
        async with slots:  # the hold and the deadline start once a slot is free
            held = await asyncio.to_thread(self._take, *target)
            if held is None:
                return "NOT_DUE"
            status: int | None = None
            error: str | None = "the job no longer exists"
            if held.job is not None:
                status, error = await self._send(client, held.job, held.secret)
            return await asyncio.to_thread(self._record, held, status, error)

    def _take(self, space: str, job_id: str, seen: Snapshot | None = None) -> Held | None:
        """Hold the next attempt, with the job to send (None: not due, or held elsewhere)."""
        attempt = self.deliveries.take(space, job_id, self.clock.now_ms(), HOLD_MS)
        if attempt is None:
            return None
        if seen is None:
            seen = self.jobs.snapshot(space, job_id)
        if seen is None or seen.job.callback is None:
            return Held(space, job_id, attempt, None, None)
        job = self.jobs.outcome(seen)  # the body carries no payload
        return Held(space, job_id, attempt, job, self.settings.get(space).webhook_secret)

    def _record(self, held: Held, status: int | None, error: str | None) -> str:
        next_at: int | None = None
        if held.job is None:
            state = "GAVE_UP"
        elif status is not None and 200 <= status < 300:
            state = "DELIVERED"
        else:
            next_at = self.clock.now_ms() + retry_wait_ms(held.attempt.number)
            state = "GAVE_UP" if next_at - held.attempt.first_at_ms > GIVE_UP_AFTER_MS else "PENDING"
        if state == "PENDING" and next_at is not None:
            # Before the record that puts the next try off: the clock hands it over then.
            self.timers.file(held.space, [Timer(CALLBACK, held.job_id, next_at)])
        self.deliveries.record(
            held.space,
            held.job_id,
            attempt=held.attempt.number,
            state=state,
            next_at_ms=next_at,
            status=status,
            error=error,
            now_ms=self.clock.now_ms(),
        )
        return state

    async def _send(
        self, client: httpx.AsyncClient, job: Job, secret: str | None
    ) -> tuple[int | None, str | None]:
        """One POST, over by the deadline whatever the target does. The answer's status
        decides; its body is not read."""
        assert job.callback is not None
        content = body(job)
        headers = dict(job.callback.headers)
        headers["Content-Type"] = "application/json"
        headers["User-Agent"] = "emit-callbacks/1"
        if secret:
            headers[SIGNATURE_HEADER] = sign(secret, self.clock.now_ms(), content)
        deadline = asyncio.timeout(self.send_deadline_s)
        try:
            async with deadline:
                url, extensions = job.callback.url, {}
                pinned = await asyncio.to_thread(self.policy.check_send, url)
                if pinned is not None:
                    url, headers["Host"] = pinned.url, pinned.host_header
                    extensions = {"sni_hostname": pinned.tls_name}
                async with client.stream(
                    "POST", url, content=content, headers=headers, extensions=extensions
                ) as answer:
                    status = answer.status_code
        except TargetRefused as refused:
            return None, str(refused)
        except Exception as exc:  # whatever the target did, it is a failed try, recorded
            if deadline.expired():
                return None, f"no answer within {self.send_deadline_s:g} s"
            return None, f"{type(exc).__name__}: {exc}"[:1000]
        if 200 <= status < 300:
            return status, None
        return status, f"answered {status}"
