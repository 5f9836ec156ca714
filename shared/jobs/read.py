"""Reading jobs: one job as the API shows it (with what it waits on), a page of the
space's jobs, a job's log lines and events.

Reads only: nothing here writes. A job past its retention (`Job.purged`) is not found, even
while its item lingers until DynamoDB's TTL removes it (`JobStore.job`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.errors import InvalidArgument, NotFound
from shared.ids import is_ulid
from shared.jobs.context import Context
from shared.machine import Job, JobStatus, NameState, WaitReason, waiting_on
from shared.store.dynamo import Item


@dataclass(frozen=True)
class Found:
    """One job as a read found it, with what the API shows beside it."""

    job: Job
    delivery: Delivery | None = None
    """A finished job's callback delivery (None: the job has no callback, or is unfinished)."""
    waiting_on: tuple[WaitReason, int | None] | None = None
    """What a pending job waits on, and until when where that is known."""


@dataclass(frozen=True)
class Delivery:
    record: Item | None
    """The delivery's record (None: no try recorded yet)."""


@dataclass(frozen=True)
class Page:
    jobs: list[Job]
    """Newest first, without payloads or results."""
    cursor: str | None
    """Where the next page starts (None: this is the last)."""


def get(ctx: Context, space: str, job_id: str) -> Found:
    job = _job(ctx, space, job_id, bodies=True)
    delivery = None
    if job.callback is not None and job.status.is_final:
        delivery = Delivery(ctx.deliveries.get(space, job_id))
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
    counters = ctx.jobs.counters
    full = policy.concurrency is not None and sum(counters.running(space, name)) >= policy.concurrency
    until = None
    if policy.rate is not None:
        until = counters.rate_until(space, name, policy.rate.tokens, policy.rate.interval_ms, now)
    key_full, key_until = False, None
    cap, key_rate = policy.per_key_concurrency, policy.per_key_rate
    if concurrency_key is not None and cap is not None:
        key_full = ctx.jobs.key_entries.running(space, name, concurrency_key) >= cap
    if concurrency_key is not None and key_rate is not None:
        rate = (key_rate.tokens, key_rate.interval_ms)
        key_until = ctx.jobs.key_entries.rate_until(space, name, concurrency_key, rate, now)
    return NameState(
        paused=policy.paused,
        at_concurrency=full,
        rate_until_ms=until,
        key_at_concurrency=key_full,
        key_rate_until_ms=key_until,
    )


def page(
    ctx: Context, space: str, *, status: JobStatus | None, name: str | None, limit: int, cursor: str | None
) -> Page:
    if cursor is not None and not is_ulid(cursor):
        raise InvalidArgument("cursor: is not a cursor this API gave")
    now = ctx.clock.now_ms()
    rows = ctx.jobs.page(space, before=cursor, limit=limit + 1, status=status, name=name, now_ms=now)
    more = len(rows) > limit
    rows = rows[:limit]
    return Page([ctx.jobs.load(space, r, bodies=False) for r in rows], rows[-1]["sk"] if more else None)


def lines(ctx: Context, space: str, job_id: str, *, cursor: str | None, limit: int) -> dict[str, Any]:
    job = _job(ctx, space, job_id)
    after = _seq_cursor(cursor)
    found = ctx.journal.lines(space, job_id, after, limit)
    lines = []
    for seq, line in found:
        shown = {"seq": seq, **line}
        if "metadata" in shown:
            shown["metadata"] = json.loads(shown["metadata"])
        lines.append(shown)
    next_seq = found[-1][0] + 1 if found else after
    return {
        "lines": lines,
        "cursor": _next_cursor(next_seq, job.line_count, len(found) == limit),
    }


def events(ctx: Context, space: str, job_id: str, *, cursor: str | None, limit: int) -> dict[str, Any]:
    job = _job(ctx, space, job_id)
    after = _seq_cursor(cursor)
    rows = ctx.journal.events(space, job_id, after, limit)
    events = [{"seq": int(r["sk"]), "atMs": r["atMs"], "event": json.loads(r["body"])} for r in rows]
    next_seq = events[-1]["seq"] + 1 if events else after
    return {
        "events": events,
        "cursor": _next_cursor(next_seq, job.event_count, len(rows) == limit),
    }


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
