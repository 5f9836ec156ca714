"""What the clock does, every tick: what is due in its three books. The deadline book
(cancel jobs past their deadlines), the lease book (expire leases) and the timer book
(`shared.timers`: fail jobs nobody claimed, hand callbacks over, narrow names, give back
room, hint workers, make schedules' jobs).

A tick reads the books' maps of the slots begun by then (one query, `shared.store.books`)
and only the partitions they name: with nothing due, that one call, whatever the number
of spaces. Each change is a conditional write that a repeated or late tick cannot apply
twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from shared import limits
from shared.callbacks import HOLD_MS, Due, Outbox
from shared.clock import Clock
from shared.job import Job, JobStatus
from shared.jobs.deadlines import cancel_expired
from shared.jobs.schedules import Fires
from shared.machine import expire
from shared.policy import Policies
from shared.recount import Recount
from shared.spaces import SpaceSettings
from shared.spread import NARROW_EVERY_MS, Spreader
from shared.store.port import (
    CALLBACK,
    HEAL,
    HINT,
    NARROW,
    RECOUNT,
    SCHEDULE,
    UNCLAIMED,
    BookPort,
    Bucket,
    DeadlineEntry,
    DeliveryStorePort,
    JobConflict,
    JobStorePort,
    LeaseEntry,
    SpaceStorePort,
    Timer,
)
from shared.timers import Timers
from shared.unclaimed import NeverClaimed
from shared.wake import Wake

B = TypeVar("B", LeaseEntry, DeadlineEntry, Timer)
"""A book's entries: the lease book's, the deadline book's or the timer book's."""

DRAIN_THREADS = 32
"""A book's partitions drained at once: each waits on DynamoDB most of its time."""


@dataclass
class TickReport:
    expired: int = 0
    refiled: int = 0
    past_deadline: int = 0
    """Jobs this tick cancelled at their deadlines."""
    unclaimed: int = 0
    callbacks: dict[str, int] = field(default_factory=dict)
    timers: int = 0
    """Timers handled (`shared.timers`)."""
    scheduled: int = 0
    """Jobs schedules made (`shared.jobs.schedules`)."""

    def add(self, part: TickReport) -> None:
        self.expired += part.expired
        self.refiled += part.refiled
        self.past_deadline += part.past_deadline
        self.unclaimed += part.unclaimed
        self.timers += part.timers
        self.scheduled += part.scheduled
        for state, n in part.callbacks.items():
            self.callbacks[state] = self.callbacks.get(state, 0) + n


class Sweeper:
    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStorePort,
        spaces: SpaceStorePort,
        settings: SpaceSettings,
        policies: Policies,
        leases: BookPort[LeaseEntry],
        deliveries: DeliveryStorePort,
        outbox: Outbox,
        spreader: Spreader,
        timers: Timers,
        never_claimed: NeverClaimed,
        wake: Wake | None = None,
        schedules: Callable[[str, str, int], Fires] | None = None,
        recount: Recount | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.spaces = spaces
        self.settings = settings
        self.policies = policies
        self.leases = leases
        self.deliveries = deliveries
        self.outbox = outbox
        self.spreader = spreader
        self.timers = timers
        self.never_claimed = never_claimed
        self.wake = wake
        """Hints for delays and backoffs that end past the stream's horizon (`shared.wake`)."""
        self.schedules = schedules
        """Makes a schedule's jobs due by then (`shared.jobs.schedules.fire_due`)."""
        self.recount = recount
        """Recounts a space's gauges from its jobs (`shared.recount`)."""
        self.rand = rand
        self.out_of_time: Callable[[], bool] = lambda: False
        """The current tick's: whether its invocation must stop (`tick`)."""

    def tick(self, *, tick_ms: int, out_of_time: Callable[[], bool] = lambda: False) -> TickReport:
        """One tick of a clock that ticks every `tick_ms`: what is due by now in each book
        (`tick_ms` is kept for the handler's event; every timing lives in the books).

        `out_of_time` says when the invocation must stop (its function's timeout near): the
        drains stop at their next page, and what is left stays due for the next tick, so a
        tick with more due than one invocation can do spreads over several."""
        self.out_of_time = out_of_time
        report = TickReport()
        self.cancel_past_deadline(report)
        self.expire_leases(report)
        self.handle_timers(report)
        return report

    # -- deadlines ------------------------------------------------------------

    def cancel_past_deadline(self, report: TickReport, *, rounds: int = 400) -> None:
        """Every job whose deadline has passed unfinished is cancelled (error `expired`),
        found through the deadline book (`shared.store.deadlines`): jobs without a deadline
        cost nothing here."""
        self._drain_book(self.jobs.deadlines, self._cancel_bucket, report, rounds, _entries_jobs)

    def _cancel_bucket(
        self, bucket: Bucket[DeadlineEntry], now: int, report: TickReport, jobs: dict[str, Job]
    ) -> None:
        """Cancel the bucket's jobs past their deadlines; file again those still ahead (a
        bucket is due at its earliest). A job not found was never written: nothing to do."""
        later: list[tuple[str, int]] = []
        retention = self.settings.get(bucket.space).retention
        for entry in bucket.entries:
            if entry.expires_at_ms > now:
                later.append((entry.job_id, entry.expires_at_ms))
                continue
            job = jobs.get(entry.job_id)
            if job is None:
                # Not seen by an eventually consistent read: read it for sure (None: the create
                # died after filing it, and the job never came to be).
                job = self.jobs.job(bucket.space, entry.job_id, now_ms=now)
            if job is None:
                continue
            # Finished (a final status never changes back): nothing to do, no write.
            report.past_deadline += cancel_expired(
                self.jobs, bucket.space, job, now_ms=now, retention=retention
            )
        if later:
            self.jobs.deadlines.record(bucket.space, later)

    # -- leases ---------------------------------------------------------------

    def expire_leases(self, report: TickReport, *, rounds: int = 400) -> None:
        """Every claim whose lease has ended: the attempt fails, unless a report came first."""
        self._drain_book(self.leases, self._expire_bucket, report, rounds, _entries_jobs)

    def _drain_book(
        self,
        book: BookPort[B],
        handle: Callable[[Bucket[B], int, TickReport, dict[str, Job]], None],
        report: TickReport,
        rounds: int,
        jobs_of: Callable[[B], str | None],
    ) -> None:
        """Every due bucket of `book`, handled. The partitions its slot maps name
        (`shared.store.books`: none when nothing is filed) are drained side by side
        (`DRAIN_THREADS` at once), each a page of due buckets at a time until none is left
        (at most `rounds` pages a partition a tick: 2.5 million buckets), so a busy hour
        never leaves the clock behind (`make bench` shows the rate). Each partition counts
        into a report of its own (drains run side by side), added to `report` at the end.
        `jobs_of` names the job an entry is about (None: none), read for a page at once."""
        now = self.clock.now_ms()
        look = book.look(now)
        partitions = look.partitions
        drained: list[str] = []  # drained to the end: no due bucket left (not stopped at `rounds`)

        def drain(partition: str) -> TickReport:
            part, more = TickReport(), True
            for _ in range(rounds):
                if self.out_of_time():
                    break
                page, more = book.due(partition, now)
                if not page:
                    break
                wanted: dict[str, list[str]] = {}
                for bucket in page:
                    ids = (jobs_of(e) for e in bucket.entries)
                    wanted.setdefault(bucket.space, []).extend(i for i in ids if i is not None)
                # One read of every job the page names (per space), then one delete of the page.
                jobs = {
                    space: self.jobs.found(space, ids, consistent=False) if ids else {}
                    for space, ids in wanted.items()
                }
                for bucket in page:
                    handle(bucket, now, part, jobs[bucket.space])
                book.remove(page)
                if not more:
                    break
            if not more:
                drained.append(partition)
            return part

        threads = max(1, min(DRAIN_THREADS, len(partitions)))
        with ThreadPoolExecutor(threads, thread_name_prefix="emit-books") as pool:
            for part in pool.map(drain, partitions):
                report.add(part)
        book.drained(look, drained)

    def _expire_bucket(
        self, bucket: Bucket[LeaseEntry], now: int, report: TickReport, jobs: dict[str, Job]
    ) -> None:
        refile: list[tuple[str, int, int]] = []
        for entry in bucket.entries:
            job = jobs.get(entry.job_id)
            if job is not None and job.attempt < entry.attempt:
                # A read from before this claim (eventually consistent): read it again for sure.
                job = self.jobs.job(bucket.space, entry.job_id, now_ms=now)
            if job is None or job.status != JobStatus.RUNNING or job.attempt != entry.attempt:
                continue  # reported, cancelled, or never claimed at all: nothing to do
            outcome = self._expire(bucket.space, job, now)
            if outcome == "renewed":
                refile.append((entry.job_id, entry.attempt, lease_of(job)))
            elif outcome != "moot":
                # Only the expiries this tick's own write applied count: an overlapping
                # tick (or a report) that got there first did the work, not this one.
                report.expired += 1
        if refile:
            self.leases.record(bucket.space, refile)
            report.refiled += len(refile)

    def _expire(self, space: str, job: Job, now: int) -> JobStatus | Literal["renewed", "moot"]:
        """Expire the attempt if its lease has ended: the status this write moved it to;
        "renewed" when its lease was renewed (file it again); "moot" when something else
        (a report, a cancel, another tick) moved it first."""
        for _ in range(2):
            if lease_of(job) > now:
                return "renewed"
            transition = expire(
                job,
                now_ms=now,
                rand=self.rand(),
                retention=self.settings.get(space).retention,
                aging_ms=self.policies.get(space, job.name).aging_ms,
            )
            error = self.jobs.pack(space, job.id, "error", transition.changes["error"].encode())
            try:
                self.jobs.transition(space, job.id, transition, value=error, held=job)
            except JobConflict as failed:
                current = failed.current
                if current is None or current.status != JobStatus.RUNNING:
                    return "moot"  # finished, expired or gone meanwhile: nothing left to expire
                if current.attempt != job.attempt:
                    return "moot"
                job = current  # renewed meanwhile: look again (with the holds it has now)
                continue
            return transition.to
        return "renewed"

    # -- timers -------------------------------------------------------------

    def handle_timers(self, report: TickReport, *, rounds: int = 400) -> None:
        """Every timer due (`shared.timers`): each handled on the items that decide, and
        filed again where the handler says, or where it is not due yet (far ahead)."""
        self._drain_book(self.timers.book, self._timer_bucket, report, rounds, lambda _: None)

    def _timer_bucket(self, bucket: Bucket[Timer], now: int, report: TickReport, _: dict[str, Job]) -> None:
        space = bucket.space
        later: list[Timer] = []
        due: list[Due] = []
        for timer in bucket.entries:
            if timer.due_ms > now:
                later.append(timer)
                continue
            report.timers += 1
            if timer.kind == CALLBACK:
                again = self._callback(space, timer.subject, now, report)
                if again is not None:
                    due.append((space, timer.subject))
                    later.append(again)
            else:
                later += self._timer(space, timer, now, report)
        self.timers.file(space, later)
        # After the filing: a sender that dies is handed its delivery again by that.
        self.outbox.submit(due)
        if due:
            report.callbacks["HANDED_OVER"] = report.callbacks.get("HANDED_OVER", 0) + len(due)

    def _timer(self, space: str, timer: Timer, now: int, report: TickReport) -> list[Timer]:
        """Handle a due timer but a callback's: the timers to file again."""
        name = timer.subject
        if timer.kind == UNCLAIMED:
            checked = self.never_claimed.check(space, timer, now)
            report.unclaimed += checked.failed
            return checked.again
        if timer.kind == NARROW:
            if self.spreader.narrow(space, name, self.policies.space(space).spread(name), now):
                return [Timer(NARROW, name, now + NARROW_EVERY_MS)]
        elif timer.kind == HEAL:
            self.spaces.heal(space, now)
        elif timer.kind == HINT and self.wake is not None:
            self.wake.hint(space, name)
        elif timer.kind == SCHEDULE and self.schedules is not None:
            fires = self.schedules(space, timer.subject, now)
            report.scheduled += fires.made
        elif timer.kind == RECOUNT and self.recount is not None:
            return self.recount.handle(space, timer.subject, now)
        return []

    def _callback(self, space: str, job_id: str, now: int, report: TickReport) -> Timer | None:
        """A delivery to hand to the sender now, with the check to file again should the
        sender die (None: nothing due). A finished job whose delivery the stream never
        recorded (its write failed through every retry) is recorded here. The clock never
        sends itself: a target that does not answer would hold up the tick, and every
        space's leases and deadlines with it."""
        delivery = self.deliveries.state(space, job_id)
        if delivery is None:
            seen = self.jobs.snapshot(space, job_id)
            if seen is None or seen.job.callback is None or not seen.job.status.is_final:
                return None  # gone, or its finishing write never applied
            if not self.deliveries.start(space, job_id, now):
                return None
            report.callbacks["UNRECORDED"] = report.callbacks.get("UNRECORDED", 0) + 1
        elif delivery.state != "PENDING" or (delivery.next_at_ms or 0) > now:
            return None  # over, or put off by its sender, who filed its next try
        return Timer(CALLBACK, job_id, now + HOLD_MS + limits.MINUTE_MS)


def lease_of(job: Job) -> int:
    return job.lease_until_ms or 0


def _entries_jobs(entry: LeaseEntry | DeadlineEntry) -> str:
    return entry.job_id
