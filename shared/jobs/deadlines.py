"""Cancelling a job at its deadline: the one write the clock, a claim and a report share.

Whoever finds an unfinished job past its `expiresAtMs` first (the clock draining the
deadline book, a claim whose candidate turned out expired, a worker's report arriving
late) makes the same conditional write; the `deadline` transition's guard lets exactly one
of them apply, so a repeated tick or a race between them is harmless.

`cancel_expired` takes the job store alone, as the clock (`shared.sweeper`) has no more;
`cancel_found` is a claim's or a report's (over the job it found past its deadline), over
their context, and never fails them. Each takes the job as its caller read it: the holds
it was read with are what the write lets go.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from shared.job import Job, Retention
from shared.jobs.context import Context
from shared.machine import EXPIRED, deadline
from shared.observability import logger
from shared.store.port import JobConflict, JobStorePort


def cancel_expired(jobs: JobStorePort, space: str, job: Job, *, now_ms: int, retention: Retention) -> bool:
    """Cancel `job` (as last read) with error `expired` if its deadline has passed
    unfinished: whether this write did it. The job's holds are let go in the same write,
    as any finish does (those it was read with; the write finds any it took since)."""
    if not job.past_deadline(now_ms):
        return False
    error = jobs.pack(space, job.id, "error", EXPIRED.encode())
    has_callback = job.callback is not None
    try:
        jobs.transition(
            space,
            job.id,
            deadline(now_ms=now_ms, retention=retention, has_callback=has_callback),
            value=error,
            held=job,
        )
    except JobConflict:
        return False  # finished, or cancelled by another, since it was read
    return True


def cancel_found(ctx: Context, space: str, job: Job, *, now: int) -> None:
    """Cancel a job found past its deadline (by a claim, or by a report's refusal:
    `Rejected.expired`), as the clock would have: a fault leaves it to the clock, rather
    than fail the claim or the report."""
    with afterthought(job):
        cancel_expired(ctx.jobs, space, job, now_ms=now, retention=ctx.settings.get(space).retention)


@contextlib.contextmanager
def afterthought(job: Job) -> Iterator[None]:
    """A side write of a claim or a report: on a job a claim won but does not answer
    with, or on one found past its deadline. If the job changed since (a cancel), there
    is nothing left to do; a fault leaves the job to its lease's expiry (or to the clock)
    rather than fail the claim, whose other jobs are already running."""
    try:
        yield
    except JobConflict:
        pass
    except Exception:
        logger.exception("a claim could not settle a job", extra={"action": "claim", "job": job.id})
