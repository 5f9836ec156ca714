"""Cancelling a job at its deadline: the one write the clock, a claim and a report share.

Whoever finds an unfinished job past its `expiresAtMs` first (the clock draining the
deadline book, a claim whose candidate turned out expired, a worker's report arriving
late) makes the same conditional write; the `deadline` transition's guard lets exactly one
of them apply, so a repeated tick or a race between them is harmless.

`cancel_expired` takes the job store alone, as the clock (`shared.sweeper`) has no more;
`cancel_found` is the claim's (over the item it found) and `cancel_refused` the report's
(over the job its refusal found), over their context, and neither ever fails them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from shared.jobs.context import Context
from shared.machine import EXPIRED, Job, Retention, deadline
from shared.observability import logger
from shared.store.blobs import pack, replacing
from shared.store.counters import Owner
from shared.store.dynamo import Item
from shared.store.jobs import JobConflict, JobStore


def cancel_expired(jobs: JobStore, space: str, item: Item, *, now_ms: int, retention: Retention) -> bool:
    """Cancel the job of `item` (its own item as last read) with error `expired` if its
    deadline has passed unfinished: whether this write did it. The job's holds are let go
    in the same write, as any finish does."""
    job = jobs.load(space, item, bodies=False)
    return _cancel(jobs, space, job, now_ms=now_ms, retention=retention, held=item)


def _cancel(
    jobs: JobStore, space: str, job: Job, *, now_ms: int, retention: Retention, held: Item | None
) -> bool:
    """Cancel `job` (as last read) if its deadline has passed unfinished: whether this write
    did it. `held`: its item as read, for the holds it lets go (None: the write finds them,
    `JobStore.apply`)."""
    if not job.past_deadline(now_ms):
        return False
    error = pack(space, job.id, "error", EXPIRED.encode())
    try:
        jobs.apply(
            space,
            job.id,
            deadline(now_ms=now_ms, retention=retention, has_callback=job.callback is not None),
            stored=replacing("error", error),
            held=held,
            owner=Owner(job.name, job.concurrency_key),
        )
    except JobConflict:
        return False  # finished, or cancelled by another, since it was read
    return True


def cancel_found(ctx: Context, space: str, item: Item, *, now: int) -> None:
    """Cancel a job found past its deadline (by a claim, or a report), as the clock would
    have: a fault leaves it to the clock, rather than fail the claim or the report."""
    with afterthought(ctx.jobs.load(space, item, bodies=False)):
        cancel_expired(ctx.jobs, space, item, now_ms=now, retention=ctx.settings.get(space).retention)


def cancel_refused(ctx: Context, space: str, job: Job, *, now: int) -> None:
    """Cancel a job a report's refusal found past its deadline (`Rejected.expired`), as the
    clock would have; a fault leaves it to the clock. Its holds are found by the write."""
    with afterthought(job):
        _cancel(ctx.jobs, space, job, now_ms=now, retention=ctx.settings.get(space).retention, held=None)


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
