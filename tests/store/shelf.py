"""What the store's contract tests share: a `Shelf` (one test's space in the store).

A test writes jobs as a create would (`shared.jobs.records.new_record` from a request),
moves them with `shared.machine`'s transitions, and reads them back through the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.clock import ManualClock
from shared.job import Job, Retention
from shared.jobs.records import new_record
from shared.machine import Transition, claim, complete
from shared.runtime import Runtime
from shared.schema import NewJob
from shared.settings import Settings
from shared.store import keys
from shared.store.dynamo import Item
from shared.store.jobs import (
    Inserted,
    JobStore,
    KeyHolder,
    NewRecord,
    Reservation,
    RetryOf,
)
from shared.store.port import ClaimPlan, ClaimResult, NameClaim

MINUTE = 60_000
LEASE = MINUTE
WINDOW = 10 * MINUTE
"""The tests' key window."""
KEEP = Retention(completed_ms=60 * MINUTE, failed_ms=120 * MINUTE)


@dataclass
class Shelf:
    """One test's space in the store, and the few steps the tests repeat."""

    rt: Runtime
    store: JobStore
    clock: ManualClock
    space: str

    def now(self) -> int:
        return self.clock.now_ms()

    def record(
        self, name: str = "n", *, aging_ms: int = MINUTE, retry_of: RetryOf | None = None, **fields: Any
    ) -> NewRecord:
        request = NewJob.model_validate({"name": name, **fields})
        return new_record(
            self.rt.context,
            self.space,
            request,
            settings=Settings(),
            now=self.now(),
            at="",
            aging_ms=aging_ms,
            width=keys.READY_SHARDS,
            retry_of=retry_of,
        )

    def insert(
        self,
        records: list[NewRecord],
        *,
        reservation: Reservation | None = None,
        per_key: Mapping[str, int | None] | None = None,
    ) -> list[Inserted]:
        return self.store.insert(
            self.space,
            records,
            key_released=self.released,
            reservation=reservation,
            per_key=per_key,
        )

    def put(self, name: str = "n", **fields: Any) -> str:
        """One new job: its id."""
        (inserted,) = self.insert([self.record(name, **fields)])
        assert inserted.new
        return inserted.id

    def released(self, holder: KeyHolder) -> bool:
        """As a create decides it: the key window after the holder finished has passed."""
        return holder.released(WINDOW, self.now())

    def claim(self, names: Mapping[str, NameClaim] | None = None, count: int = 10) -> list[str]:
        """The ids handed out, in order (of `n` at the default aging, without limits, when
        no names are given)."""
        return [job.id for job in self.claimed(names, count).claimed]

    def claimed(self, names: Mapping[str, NameClaim] | None = None, count: int = 10) -> ClaimResult:
        plan = ClaimPlan(
            names if names is not None else {"n": NameClaim(MINUTE)},
            count=count,
            lease_ms=LEASE,
            payload_budget=1_000_000,
        )
        return self.store.claim(self.space, plan, now_ms=self.now())

    def job(self, job_id: str) -> Job:
        job = self.store.job(self.space, job_id, now_ms=self.now(), bodies=True)
        assert job is not None, f"{job_id} reads as absent"
        return job

    def item(self, job_id: str) -> Item:
        item = self.store.get_item(self.space, job_id)
        assert item is not None
        return item

    def apply(self, job_id: str, transition: Transition) -> Job:
        item = self.store.apply(self.space, job_id, transition, held=self.store.get_item(self.space, job_id))
        return self.store.load(self.space, item, bodies=False)

    def running(self, name: str = "n", **fields: Any) -> str:
        """A job of its own, claimed (attempt 1)."""
        job_id = self.put(name, **fields)
        self.apply(job_id, claim(attempt_before=0, now_ms=self.now(), lease_ms=LEASE))
        return job_id

    def complete(self, job_id: str) -> Job:
        return self.apply(
            job_id, complete(attempt=self.job(job_id).attempt, now_ms=self.now(), retention=KEEP)
        )
