"""A job as the domain sees it: its statuses, its backoff, its place in the order of
hand-out, and the value the store maps to and from its item.

The values here change nothing; `shared.machine` decides every change of a job's status,
over these values.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal

BackoffKind = Literal["exponential", "linear", "constant"]
Guarantee = Literal["AT_LEAST_ONCE", "AT_MOST_ONCE"]
AT_LEAST_ONCE: Guarantee = "AT_LEAST_ONCE"
AT_MOST_ONCE: Guarantee = "AT_MOST_ONCE"
"""A job that must never run twice: once an attempt of it may have started, no path hands
it out again. Only the worker's own word puts it back (a reported failure with attempts
left, a release); a lease that ends without one stalls it (`stall`)."""


class JobStatus(enum.StrEnum):
    PENDING = "PENDING"
    """Waiting for a worker, or for a time (a delay, or the wait before a retry).
    Entered at create, by a failed attempt with attempts left, and by a release;
    left by a claim (to running) or a cancel."""

    RUNNING = "RUNNING"
    """A worker holds it under a lease. Left by the worker's report (complete, fail,
    release), by a cancel, or by the clock when the lease runs out."""

    COMPLETED = "COMPLETED"
    """Final: the worker returned a result."""

    FAILED = "FAILED"
    """Final: out of attempts, failed for good by the worker, or never claimed."""

    CANCELLED = "CANCELLED"
    """Final: cancelled before it finished."""

    STALLED = "STALLED"
    """Final: an AT_MOST_ONCE job whose lease ended without a report. Its attempt may have
    run, or may not: handing it out again could run it twice, so it is never retried."""

    @property
    def is_final(self) -> bool:
        return self in FINAL


FINAL = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.STALLED})
KEPT_AS_FAILED = frozenset({JobStatus.FAILED, JobStatus.STALLED})
"""Finished jobs kept for the space's `failedRetentionMs` (the rest: `completedRetentionMs`)."""
UNFINISHED = frozenset({JobStatus.PENDING, JobStatus.RUNNING})
RETRYABLE = KEPT_AS_FAILED
"""What `jobs:retry` makes a new job from (`shared.jobs.retry`): the jobs that ended without
doing their work, failed for good or stalled (an at-most-once job whose lease ended: a
person may know it is safe to run again, which the clock cannot)."""


@dataclass(frozen=True)
class Backoff:
    """How the waits between attempts grow.

    The n-th failure (n = 1 for the first) waits `base_ms` × 2^(n-1) (exponential),
    `base_ms` × n (linear) or `base_ms` (constant), never more than `max_ms`. With
    jitter the wait is drawn uniformly from its upper half, so jobs that failed
    together spread out but none retries sooner than half the policy's wait.
    """

    kind: BackoffKind
    base_ms: int
    max_ms: int
    jitter: bool

    def wait_ms(self, failures: int, rand: float) -> int:
        """`rand` is a uniform draw in [0, 1), injected so tests are exact."""
        n = max(failures, 1)
        if self.kind == "exponential":
            # Cap the exponent before multiplying: 2**1000 is a valid int but a silly one.
            wait = self.base_ms * 2 ** min(n - 1, 62)
        elif self.kind == "linear":
            wait = self.base_ms * n
        else:
            wait = self.base_ms
        wait = min(wait, self.max_ms)
        if self.jitter:
            wait = wait // 2 + int(rand * (wait - wait // 2))
        return wait


MAX_PRIORITY = 1_000
"""Priorities run from -MAX_PRIORITY to MAX_PRIORITY, higher first."""
STRICT_AGING_MS = 100_000_000_000
"""The interval one priority step is worth under strict priority (`agingIntervalMs: null`):
about three years, longer than any wait a job can have, so priority decides, then time."""
ORDER_OFFSET = MAX_PRIORITY * STRICT_AGING_MS
"""Keeps every order positive (it is written as a fixed-width decimal)."""


def hand_out_order(*, ready_at_ms: int, priority: int, aging_ms: int) -> int:
    """The order of hand-out, smallest first: a job of priority `p` that became claimable
    at `t` goes as if it had become claimable at `t - p * aging_ms`, so a job that waited
    long enough goes before a newer one of higher priority and none is starved."""
    return ready_at_ms - priority * aging_ms + ORDER_OFFSET


@dataclass(frozen=True)
class Place:
    """Where a pending job waits: `due` (claimable now, at `order`) or later (claimable
    from `ready_at_ms`, its order reckoned by the claim that finds it due)."""

    due: bool
    ready_at_ms: int
    order: int | None = None


def place(*, ready_at_ms: int, now_ms: int, priority: int, aging_ms: int) -> Place:
    """Due when its time has come, in order under the aging interval in force now (when it
    became claimable); else later."""
    if ready_at_ms <= now_ms:
        order = hand_out_order(ready_at_ms=ready_at_ms, priority=priority, aging_ms=aging_ms)
        return Place(due=True, ready_at_ms=ready_at_ms, order=order)
    return Place(due=False, ready_at_ms=ready_at_ms)


@dataclass(frozen=True)
class Progress:
    percent: float
    message: str | None = None


@dataclass(frozen=True)
class Callback:
    url: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Fired:
    """What made a job a schedule made: the schedule, and the fire time it was made for."""

    schedule_id: str
    at_ms: int


@dataclass(frozen=True)
class Retention:
    """How long finished jobs are kept, from the space's settings."""

    completed_ms: int
    failed_ms: int

    def purge_at(self, status: JobStatus, finished_at_ms: int) -> int:
        keep = self.failed_ms if status in KEPT_AS_FAILED else self.completed_ms
        return finished_at_ms + keep


AttemptOutcome = Literal["COMPLETED", "FAILED", "RELEASED", "EXPIRED", "CANCELLED"]
"""How an attempt ended: its worker completed it, failed it or released it; its lease ran
out (EXPIRED); or the job was cancelled while it ran (a cancel, its deadline)."""

ATTEMPTS_KEPT = 10
"""The job item keeps the record of its last this many attempts (slot: attempt mod this),
so a job that retries for ever never outgrows its item."""
ATTEMPT_ERROR_CHARS = 100
"""An attempt's record keeps this much of its error; the job's `error` keeps the last in full."""


@dataclass(frozen=True)
class Attempt:
    """One hand-out of a job: when it started, and when and how it ended (None while it runs)."""

    attempt: int
    started_at_ms: int
    ended_at_ms: int | None = None
    outcome: AttemptOutcome | None = None
    error: str | None = None


@dataclass(frozen=True)
class Job:
    """A job as the domain sees it; the store maps it to and from its item."""

    id: str
    space: str
    name: str
    status: JobStatus
    attempt: int
    failures: int
    max_attempts: int
    timeout_ms: int
    backoff: Backoff
    created_at_ms: int
    run_at_ms: int
    ready_at_ms: int | None = None
    lease_until_ms: int | None = None
    finished_at_ms: int | None = None
    purge_at_ms: int | None = None
    key: str | None = None
    priority: int = 0
    concurrency_key: str | None = None
    guarantee: Guarantee = AT_LEAST_ONCE
    expires_at_ms: int | None = None
    """Its deadline: not finished by then, it is cancelled (`deadline`); never handed out after."""
    progress: Progress | None = None
    callback: Callback | None = None
    error: str | None = None
    line_count: int = 0
    event_count: int = 0
    payload: Any = None
    result: Any = None
    retry_of: str | None = None
    """The failed job this one was made from by `jobs:retry` (`shared.jobs.retry`)."""
    schedule: Fired | None = None
    """The schedule that made it, for which fire time (`shared.jobs.schedules`)."""
    lapsed_attempt: int | None = None
    """The last attempt whose lease ended without a report (`expire`): that attempt's worker
    lost its hold, so its later reports are STALE, even while no other attempt holds the job."""
    holds: frozenset[str] = frozenset()
    """The counts it holds a place in (`Hold` tags: its space's `maxInFlight`, a name's or a
    key's slot): a transition that lets go of one releases it in the same write."""
    traceparent: str | None = None
    """The producer's W3C trace context (`traceparent`), handed to each attempt's worker."""
    attempts: tuple[Attempt, ...] = ()
    """The records of its last `ATTEMPTS_KEPT` attempts, oldest first, as stored (`history`
    adds what the store leaves to be read from the job)."""

    def history(self) -> tuple[Attempt, ...]:
        """Its attempts as a person reads them. A cancel or a deadline that finished the job
        while an attempt ran ends that attempt, at the job's finish: the cancel's write does
        not know which attempt runs (it is guarded on the status alone), so it is read here."""
        if not self.attempts or not self.status.is_final or self.finished_at_ms is None:
            return self.attempts
        last = self.attempts[-1]
        if last.ended_at_ms is not None or last.attempt != self.attempt:
            return self.attempts
        ended = Attempt(last.attempt, last.started_at_ms, self.finished_at_ms, "CANCELLED")
        return (*self.attempts[:-1], ended)

    def purged(self, now_ms: int) -> bool:
        """Past its retention at `now_ms`: gone for every read, even before the store has
        removed it."""
        return self.purge_at_ms is not None and self.purge_at_ms <= now_ms

    def past_deadline(self, now_ms: int) -> bool:
        """Unfinished with a deadline passed by `now_ms` (the `deadline` transition would apply)."""
        return self.expires_at_ms is not None and self.expires_at_ms <= now_ms and not self.status.is_final
