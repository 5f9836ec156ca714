"""Reading jobs: one job as the API shows it (with what it waits on), a page of the
space's jobs, a job's log lines and events.

Reads only: nothing here writes. A job past its retention (`Job.purged`) is not found, even
while its item lingers until DynamoDB's TTL removes it (`JobStore.job`). Each answers a
value (`Found`, `JobPage`, `LinePage`, `EventPage`) that `shared.render` shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import InvalidArgument, NotFound
from shared.ids import is_ulid
from shared.job import Job, JobStatus
from shared.jobs.context import Context
from shared.machine import NameState, WaitReason, waiting_on
from shared.store.port import DeliveryState, Event, JobPage, Line

PENDING_DELIVERY = DeliveryState(state="PENDING", attempts=0)
"""A finished job's delivery before its first try is recorded."""


@dataclass(frozen=True)
class Found:
    """One job as a read found it, with what the API shows beside it."""

    job: Job
    delivery: DeliveryState | None = None
    """A finished job's callback delivery (None: the job has no callback, or is unfinished)."""
    waiting_on: tuple[WaitReason, int | None] | None = None
    """What a pending job waits on, and until when where that is known."""


@dataclass(frozen=True)
class LinePage:
    lines: list[Line]
    cursor: str | None
    """The next `seq` to ask from (None: nothing more yet)."""


@dataclass(frozen=True)
class EventPage:
    events: list[Event]
    cursor: str | None
    """The next `seq` to ask from (None: nothing more yet)."""


def get(ctx: Context, space: str, job_id: str) -> Found:
    job = _job(ctx, space, job_id, bodies=True)
    delivery = None
    if job.callback is not None and job.status.is_final:
        delivery = ctx.deliveries.state(space, job_id) or PENDING_DELIVERY
    reason = None
    if job.status == JobStatus.PENDING:
        now = ctx.clock.now_ms()
        ready = job.ready_at_ms if job.ready_at_ms is not None else job.run_at_ms
        # The name's counters are read only for a job that waits on nothing of its own.
        state = name_state(ctx, space, job.name, now, job.concurrency_key) if ready <= now else NameState()
        reason = waiting_on(job, now_ms=now, name=state)
    return Found(job, delivery, reason)


def name_state(
    ctx: Context, space: str, name: str, now: int, concurrency_key: str | None = None
) -> NameState:
    """What holds the name's claimable jobs back now: its pause, its concurrency (slots
    read now), its rate (when it next allows a hand-out); and for a job with a
    `concurrencyKey`, whether its key has `perKeyConcurrency` jobs running."""
    policy = ctx.policies.get(space, name)
    jobs = ctx.jobs
    full = policy.concurrency is not None and jobs.running(space, name) >= policy.concurrency
    until = None
    if policy.rate is not None:
        until = jobs.rate_until(
            space, name, tokens=policy.rate.tokens, interval_ms=policy.rate.interval_ms, now_ms=now
        )
    key_full, key_until = False, None
    cap, key_rate = policy.per_key_concurrency, policy.per_key_rate
    if concurrency_key is not None and cap is not None:
        key_full = jobs.key_running(space, name, concurrency_key) >= cap
    if concurrency_key is not None and key_rate is not None:
        key_until = jobs.key_rate_until(
            space, name, concurrency_key, tokens=key_rate.tokens, interval_ms=key_rate.interval_ms, now_ms=now
        )
    return NameState(
        paused=policy.paused,
        at_concurrency=full,
        rate_until_ms=until,
        key_at_concurrency=key_full,
        key_rate_until_ms=key_until,
    )


def page(
    ctx: Context, space: str, *, status: JobStatus | None, name: str | None, limit: int, cursor: str | None
) -> JobPage:
    """Newest first, without payloads or results; the cursor is the last job's id."""
    if cursor is not None and not is_ulid(cursor):
        raise InvalidArgument("cursor: is not a cursor this API gave")
    now = ctx.clock.now_ms()
    return ctx.jobs.jobs_page(space, before=cursor, limit=limit, status=status, name=name, now_ms=now)


def lines(ctx: Context, space: str, job_id: str, *, cursor: str | None, limit: int) -> LinePage:
    job = _job(ctx, space, job_id)
    after = _seq_cursor(cursor)
    found = ctx.journal.lines(space, job_id, after, limit)
    next_seq = found[-1].seq + 1 if found else after
    return LinePage(found, _next_cursor(next_seq, job.line_count, len(found) == limit))


def events(ctx: Context, space: str, job_id: str, *, cursor: str | None, limit: int) -> EventPage:
    job = _job(ctx, space, job_id)
    after = _seq_cursor(cursor)
    found = ctx.journal.events(space, job_id, after, limit)
    next_seq = found[-1].seq + 1 if found else after
    return EventPage(found, _next_cursor(next_seq, job.event_count, len(found) == limit))


def _job(ctx: Context, space: str, job_id: str, *, bodies: bool = False) -> Job:
    """The job (with its payload, result and error if `bodies`); NotFound if there is none
    or it is past its retention."""
    job = ctx.jobs.job(space, job_id, now_ms=ctx.clock.now_ms(), bodies=bodies) if is_ulid(job_id) else None
    if job is None:
        raise NotFound(f"job {job_id} does not exist in space {space}")
    return job


def _next_cursor(next_seq: int, count: int, full: bool) -> str | None:
    """Where the next page starts, while a full page leaves some of the job's `count` unread.
    Past a short page nothing more is stored, even when the count says more: a report's
    lines or event lost to a fault after its job's write leave a gap that never fills."""
    return str(next_seq) if full and next_seq < count else None


def _seq_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 10:
        raise InvalidArgument("cursor: is not a cursor this API gave")
    return int(cursor)
