"""What the table's stream drives: a callback and notices (`shared.jobs.notify`) when a job
finishes, hints to listening workers, timers for the clock (`shared.timers`), and cleaning
up after a job that retention removed.

Every step is safe to repeat: a delivery is recorded with a conditional put (a record
seen twice starts nothing twice), attempts are held one sender at a time, and cleanup
deletes what may already be gone. A removed job's delivery is replaced by a tombstone,
so its finish record replayed after the removal starts nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.callbacks import Due, Outbox
from shared.clock import Clock
from shared.counts import tally_of, waits_of
from shared.jobs.notify import Notifier
from shared.observability import logger
from shared.recount import Recount
from shared.spaces import SpaceSettings
from shared.store.port import (
    HINT,
    UNCLAIMED,
    Counted,
    DeliveryStorePort,
    JobChange,
    JobStorePort,
    SpaceStorePort,
    Tally,
    TallyStorePort,
)
from shared.timers import Timers, period_end
from shared.wake import LATER_HORIZON_MS, Wake


@dataclass(frozen=True)
class Read:
    """A stream record as parsed once: what it counts for, its change (None: not a job's),
    or why it could not be parsed."""

    counted: Counted
    change: JobChange | None
    error: Exception | None = None


class StreamProcessor:
    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStorePort,
        deliveries: DeliveryStorePort,
        outbox: Outbox,
        spaces: SpaceStorePort,
        settings: SpaceSettings,
        timers: Timers,
        unclaimed_every_ms: int,
        tick_ms: int,
        notifier: Notifier | None = None,
        wake: Wake | None = None,
        tallies: TallyStorePort | None = None,
        recount: Recount | None = None,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.deliveries = deliveries
        self.outbox = outbox
        self.spaces = spaces
        self.settings = settings
        self.timers = timers
        self.unclaimed_every_ms = unclaimed_every_ms
        """The period of a name's never-claimed checks (`shared.unclaimed`)."""
        self.tick_ms = tick_ms
        """The clock's tick: how finely the clock's hints are filed."""
        self.notifier = notifier
        self.wake = wake
        """Hints to listening workers when a job may have become claimable (`shared.wake`)."""
        self.tallies = tallies
        """Every name's and space's counts (`shared.counts`)."""
        self.recount = recount
        """Recounts that heal the counts should a batch be lost (`shared.recount`)."""

    def apply(self, record: Mapping[str, Any]) -> tuple[Due | None, Counted]:
        """Apply one record: the delivery it made due, and what it counts for."""
        read = self.read(record)
        return self.effects(read), read.counted

    def read(self, record: Mapping[str, Any]) -> Read:
        """One record, parsed once: its change, and what it counts for (`shared.counts`;
        nothing for any but a job's). Counted before its effects are applied, so a record
        whose effects keep failing (and end in the dead-letter queue) still counts; one that
        cannot be parsed counts for nothing and fails when applied."""
        record_id = str(record.get("eventID") or (record.get("dynamodb") or {}).get("SequenceNumber"))
        try:
            change = JobChange.of(record)
        except Exception as exc:
            logger.exception(
                "a stream record that cannot be read is not counted", extra={"record": record_id}
            )
            return Read(Counted(record_id), None, exc)
        if change is None:
            return Read(Counted(record_id), None)
        tally, waits = tally_of(change), waits_of(change)
        watched = bool(waits) and change.name in self.settings.get(change.space).metrics
        return Read(Counted(record_id, change.space, change.name, tally, waits, watched), change)

    def effects(self, read: Read) -> Due | None:
        """Apply a record's effects; answers the delivery it made due, with the finished job."""
        if read.error is not None:
            raise read.error
        return None if read.change is None else self.changed(read.change)

    def count(self, records: list[Counted]) -> Tally:
        """Count a batch's records once each (`shared.store.tallies`): what was counted now."""
        if self.tallies is None or not records:
            return Tally()
        spaces = {r.space for r in records if r.tally}
        try:
            counted = self.tallies.count(records, self.clock.now_ms())
        except Exception:
            # Retried by Lambda; should every retry fail, the batch is lost uncounted: the
            # recount filed now (for once the retries are over) puts its moves back.
            if self.recount is not None:
                with contextlib.suppress(Exception):
                    self.recount.lost(spaces)
            raise
        if self.recount is not None:
            for space in spaces:
                self.recount.counted(space)
        return counted

    def retried_from(self, records: list[Counted], first_failed: str) -> None:
        """Lambda sends the batch again from the record `first_failed` (the first its effects
        failed at): mark that what follows is counted, so the retry does not count it again."""
        if self.tallies is not None and records:
            self.tallies.mark(first_failed, records[-1].record_id, self.clock.now_ms())

    def record(self, record: Mapping[str, Any]) -> Due | None:
        """Apply one record's effects; answers the delivery it made due, with the finished job."""
        return self.effects(self.read(record))

    def changed(self, change: JobChange) -> Due | None:
        """Apply one job's change; answers the delivery it made due, with the finished job."""
        if self.wake is not None:
            self.wake.changed(change)
        ended, removed = change.finished_job, change.removed_job
        if ended is not None and self.notifier is not None:
            # Before the callback: a record that fails here is retried whole, and the
            # callback's start is as safe to repeat as the notices are.
            self.notifier.ended(change.space, ended)
        self.file_timers(change)
        if ended is not None and ended.job.callback is not None:
            now = self.clock.now_ms()
            if not self.deliveries.start(change.space, change.job_id, now):
                return None  # delivered, given up, or the job is gone: a late replay
            return change.space, change.job_id, ended
        if removed is not None:
            self.jobs.forget_removed(removed)
            if removed.job.callback is not None:
                self.deliveries.bury(change.space, change.job_id, self.clock.now_ms())
        return None

    def file_timers(self, change: JobChange) -> None:
        """File what the change makes due later (`shared.timers`), one filing a period per
        name and process: the name's never-claimed check, for a job that became pending (at
        its ready time plus the window) or a job of a limited name that let its slot go
        (now: a job waiting on the slot may be claimable); a hint for a delay or backoff
        ending past what `shared.wake` puts off itself."""
        space, now = change.space, self.clock.now_ms()
        became = change.became_pending(now)
        freed = change.freed_room
        if became is None and freed is None:
            return
        window = self.settings.get(space).unclaimed_ms
        every = self.unclaimed_every_ms
        if became is not None:
            name, ready = became
            if window is not None:
                due = ready + window
                self.timers.once(space, UNCLAIMED, name, due, per_ms=every, until_ms=period_end(due, every))
            if self.wake is not None and ready - now > LATER_HORIZON_MS:
                tick = (
                    self.tick_ms
                )  # the hint goes out at the first tick all of a tick's delays have ended by
                self.timers.once(space, HINT, name, -(-ready // tick) * tick, per_ms=tick)
        if freed is not None and window is not None:
            self.timers.once(space, UNCLAIMED, freed, now, per_ms=every, until_ms=period_end(now, every))

    def deliver(self, due: list[Due]) -> None:
        """Hand the callbacks these records made due to the sender, which makes their first
        tries (never here: a target that does not answer would hold up the stream); what
        fails there waits for the clock."""
        once = {(target[0], target[1]): target for target in due}  # a record seen twice: one try
        self.outbox.submit(list(once.values()))
