"""What the table's stream drives: a callback and notices (`shared.jobs.notify`) when a job
finishes, and cleaning up after a job that retention removed.

Every step is safe to repeat: a delivery is recorded with a conditional put (a record
seen twice starts nothing twice), attempts are held one sender at a time, and cleanup
deletes what may already be gone. A removed job's delivery is replaced by a tombstone,
so its finish record replayed after the removal starts nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.callbacks import Due, Outbox
from shared.clock import Clock
from shared.jobs.notify import Notifier
from shared.store.port import DeliveryStorePort, JobChange, JobStorePort, SpaceStorePort
from shared.wake import Wake


class StreamProcessor:
    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStorePort,
        deliveries: DeliveryStorePort,
        outbox: Outbox,
        spaces: SpaceStorePort,
        notifier: Notifier | None = None,
        wake: Wake | None = None,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.deliveries = deliveries
        self.outbox = outbox
        self.spaces = spaces
        self.notifier = notifier
        self.wake = wake
        """Hints to listening workers when a job may have become claimable (`shared.wake`)."""

    def record(self, record: Mapping[str, Any]) -> Due | None:
        """Apply one record; answers the delivery it made due, with the finished job."""
        change = JobChange.of(record)
        if change is None:
            return None
        if self.wake is not None:
            self.wake.changed(change)
        ended, removed = change.finished_job, change.removed_job
        if ended is not None and self.notifier is not None:
            # Before the callback: a record that fails here is retried whole, and the
            # callback's start is as safe to repeat as the notices are.
            self.notifier.ended(change.space, ended)
        if ended is not None and ended.job.callback is not None:
            # Listed at create; again here (once a function) for a job made before its
            # space's callback partitions were listed, whose retries the clock must find.
            self.spaces.register_callbacks(change.space)
            now = self.clock.now_ms()
            if not self.deliveries.start(change.space, change.job_id, now, clear_mark=ended.marked):
                return None  # delivered, given up, or the job is gone: a late replay
            return change.space, change.job_id, ended
        if removed is not None:
            self.jobs.forget_removed(removed)
            if removed.job.callback is not None:
                self.deliveries.bury(change.space, change.job_id, self.clock.now_ms())
        return None

    def deliver(self, due: list[Due]) -> None:
        """Hand the callbacks these records made due to the sender, which makes their first
        tries (never here: a target that does not answer would hold up the stream); what
        fails there waits for the clock."""
        once = {(target[0], target[1]): target for target in due}  # a record seen twice: one try
        self.outbox.submit(list(once.values()))
