"""What the clock does, every tick: cancel jobs past their deadlines, expire leases, fail
jobs nobody claimed, retry callbacks.

Each piece finds its work through a small index or the lease book (never a scan), and
each change is a conditional write that a repeated or late tick cannot apply twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from shared.callbacks import Due, Outbox
from shared.clock import Clock
from shared.job import Job, JobStatus
from shared.jobs.deadlines import cancel_expired
from shared.machine import expire, unclaimed
from shared.policy import Policies, SpacePolicies
from shared.spaces import SpaceSettings
from shared.spread import Spreader
from shared.store.port import (
    BookPort,
    Bucket,
    DeadlineEntry,
    DeliveryStorePort,
    JobConflict,
    JobStorePort,
    LeaseEntry,
    Owner,
    SpaceStorePort,
)

E = TypeVar("E", LeaseEntry, DeadlineEntry)
"""A book's entries: the lease book's or the deadline book's."""

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
        unclaimed_every_ms: int,
        unclaimed_per_name: int = 1_000,
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
        self.unclaimed_every_ms = unclaimed_every_ms
        """Never-claimed jobs are looked for less often than every tick: their windows are days."""
        self.unclaimed_per_name = unclaimed_per_name
        self.rand = rand

    def tick(self, *, tick_ms: int) -> TickReport:
        """One tick of a clock that ticks every `tick_ms`."""
        report = TickReport()
        self.cancel_past_deadline(report)
        self.expire_leases(report)
        now, every = self.clock.now_ms(), self.unclaimed_every_ms
        # Stateless cadence: the tick that crosses a multiple of the interval does it, so a
        # repeated or late tick neither skips nor doubles the look.
        if now // every != (now - tick_ms) // every:
            self.fail_unclaimed(report)
        self.retry_callbacks(report)
        self.narrow_names()
        return report

    # -- ready shards ---------------------------------------------------------

    def narrow_names(self) -> None:
        """Names spread wider than at rest go back towards it once their load has gone
        (`shared.spread`): one read of each space's own partition, and nothing more for a
        name at rest."""
        now = self.clock.now_ms()
        for space in self.spaces.all_spaces():
            for name, spread in self.policies.space(space).spreads.items():
                if not spread.at_rest:
                    self.spreader.narrow(space, name, spread, now)

    # -- deadlines ------------------------------------------------------------

    def cancel_past_deadline(self, report: TickReport, *, rounds: int = 400) -> None:
        """Every job whose deadline has passed unfinished is cancelled (error `expired`),
        found through the deadline book (`shared.store.deadlines`): jobs without a deadline
        cost nothing here."""
        self._drain_book(self.jobs.deadlines, self._cancel_bucket, report, rounds)

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
        self._drain_book(self.leases, self._expire_bucket, report, rounds)

    def _drain_book(
        self,
        book: BookPort[E],
        handle: Callable[[Bucket[E], int, TickReport, dict[str, Job]], None],
        report: TickReport,
        rounds: int,
    ) -> None:
        """Every due bucket of `book`, handled. The partitions its slot maps name
        (`shared.store.books`: none when nothing is filed) are drained side by side
        (`DRAIN_THREADS` at once), each a page of due buckets at a time until none is left
        (at most `rounds` pages a partition a tick: 2.5 million buckets), so a busy hour
        never leaves the clock behind (`make bench` shows the rate). Each partition counts
        into a report of its own (drains run side by side), added to `report` at the end."""
        now = self.clock.now_ms()
        look = book.look(now)
        partitions = look.partitions
        drained: list[str] = []  # drained to the end: no due bucket left (not stopped at `rounds`)

        def drain(partition: str) -> TickReport:
            part, more = TickReport(), True
            for _ in range(rounds):
                page, more = book.due(partition, now)
                if not page:
                    break
                wanted: dict[str, list[str]] = {}
                for bucket in page:
                    wanted.setdefault(bucket.space, []).extend(e.job_id for e in bucket.entries)
                # One read of every job the page names (per space), then one delete of the page.
                jobs = {space: self.jobs.found(space, ids, consistent=False) for space, ids in wanted.items()}
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
                report.expired += part.expired
                report.refiled += part.refiled
                report.past_deadline += part.past_deadline
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

    # -- never claimed --------------------------------------------------------

    def fail_unclaimed(self, report: TickReport) -> None:
        """Fail the pending jobs that have been claimable for their space's whole window
        (from their ready time: creation, or their release or retry) without being claimed;
        and give back the room of creates that died before settling it (`SpaceStore.heal`).

        At most `unclaimed_per_name` jobs of a name a look, so one look stays short; the
        next look goes on where this one stopped (the failed jobs have left the index)."""
        now = self.clock.now_ms()
        for space in self.spaces.all_spaces():
            self.spaces.heal(space, now)
            settings = self.settings.get(space)
            if settings.unclaimed_ms is None:
                continue
            transition = unclaimed(now_ms=now, window_ms=settings.unclaimed_ms, retention=settings.retention)
            failed = 0
            policies = self.policies.space(space)
            for name in self.spaces.names(space):
                if not self._claimable(space, name, policies, now - settings.unclaimed_ms):
                    continue
                waiting = self.jobs.unclaimed(
                    space,
                    name,
                    now - settings.unclaimed_ms,
                    policies.get(name).aging_ms,
                    self.unclaimed_per_name,
                    reach=policies.spread(name).reach,
                )
                for job in waiting:
                    error = self.jobs.pack(space, job.job_id, "error", transition.changes["error"].encode())
                    try:
                        self.jobs.transition(
                            space, job.job_id, transition, value=error, owner=Owner(name, job.concurrency_key)
                        )
                    except JobConflict:
                        continue  # claimed or cancelled since the index saw it
                    failed += 1
            report.unclaimed += failed

    def _claimable(self, space: str, name: str, policies: SpacePolicies, since_ms: int) -> bool:
        """Whether the name's ready jobs may have been claimable since `since_ms`: not while
        it is paused, nor if a pause was lifted since (its jobs count from then), nor while
        its `concurrency` or `rate` is used up (its workers are busy with it: its jobs wait
        on them, not for a worker to ask). A key at its `perKeyConcurrency` is not listed
        in the name's lanes, so the look never finds its jobs."""
        policy = policies.get(name)
        if policy.paused or policies.pause_changed_ms(name) > since_ms:
            return False
        if policy.concurrency is not None and self.jobs.running(space, name) >= policy.concurrency:
            return False
        rate = policy.rate
        if rate is None:
            return True
        now = self.clock.now_ms()
        return (
            self.jobs.rate_until(space, name, tokens=rate.tokens, interval_ms=rate.interval_ms, now_ms=now)
            is None
        )

    # -- callbacks ------------------------------------------------------------

    def retry_callbacks(self, report: TickReport) -> None:
        """Deliveries due again, and deliveries the stream never recorded: those of finished
        jobs still marked a grace after they finished. The clock records them, then hands
        them to the sender (never sends them itself: a target that does not answer would
        hold up the tick, and every space's leases and deadlines with it)."""
        now, deliveries = self.clock.now_ms(), self.deliveries
        due: dict[tuple[str, str], Due] = {}
        for found in deliveries.due(self.spaces.callback_spaces(), now):
            if not found.recorded:
                report.callbacks["UNRECORDED"] = report.callbacks.get("UNRECORDED", 0) + 1
            if found.recorded or deliveries.start(found.space, found.job_id, now, clear_mark=True):
                due[found.space, found.job_id] = (found.space, found.job_id)
        self.outbox.submit(list(due.values()))
        if due:
            report.callbacks["HANDED_OVER"] = len(due)


def lease_of(job: Job) -> int:
    return job.lease_until_ms or 0
