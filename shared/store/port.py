"""The job store as the use cases see it: a `Protocol` over domain values, never items.

What crosses the port is `shared.machine`'s `Job` and the values below: a refused
transition is a `JobConflict` carrying the job as it stood, an idempotency key's holder
is a `KeyHolder`, and a new job's payload goes in as bytes, packed by the store
(`NewRecord.packing`). The values live with the store's others (`shared.store.jobs.records`);
`shared.store.jobs.JobStore` is the one implementation (checked against `JobStorePort`
by mypy in `shared.store.jobs`).

The clock (`shared.sweeper`), the stream (`shared.stream`) and the callback sender
(`shared.callbacks`, `shared.outbox`) see jobs as `Job`s and `Snapshot`s (a job as one look
at its item saw it, whose bodies the store reads later: a stream record's image, a message's
copy), and the books, counters, deliveries and spaces through the Protocols below.

This is the port's first part. The store's other methods still speak items (`apply`'s
answer and its `extra`/`stored`/`held`, `claim`'s `Claimed.item`, `get_item`, `items`,
`page`, `load`, `forget`; `insert`, whose `key_released` is asked about a `KeyHolder`, still
takes `NewRecord`s): each joins the port as its callers move to `shared/jobs/` (issue 18,
point 1).
"""

from __future__ import annotations

from typing import Any, Protocol

from shared.machine import Job, Transition
from shared.store.blobs import Packed
from shared.store.books import Bucket, E
from shared.store.counters import Owner
from shared.store.deadlines import DeadlineEntry
from shared.store.deliveries import Attempt, Found
from shared.store.images import JobChange, Snapshot
from shared.store.jobs.records import (
    Census,
    Inserted,
    JobConflict,
    KeyHolder,
    NewRecord,
    ReportExtras,
    RetryOf,
    Waiting,
)
from shared.store.leases import LeaseEntry


class JobStorePort(Protocol):
    """What the use cases ask of the job store, in domain values."""

    def job(self, space: str, job_id: str, *, now_ms: int, bodies: bool = False) -> Job | None:
        """The job, with its payload, result and error if `bodies`; None: there is none, or
        it is past its retention at `now_ms`."""
        ...

    def holder(self, space: str, key: str) -> KeyHolder | None:
        """Who holds the idempotency key `key`, if anyone (released or not)."""
        ...

    def retries(self, space: str, job_ids: list[str]) -> dict[str, str]:
        """The jobs already made by retrying each of `job_ids` (old id -> new id)."""
        ...

    def transition(
        self,
        space: str,
        job_id: str,
        transition: Transition,
        *,
        value: Packed | None = None,
        extras: ReportExtras | None = None,
        place: Packed | None = None,
        held: Job | None = None,
        owner: Owner | None = None,
    ) -> Job:
        """Apply `transition` as one conditional write (with its counters where it takes or
        lets go of a hold); the job after it, without bodies. Raises JobConflict."""
        ...

    def pack(self, space: str, job_id: str, name: str, raw: bytes, *, attempt: int | None = None) -> Packed:
        """A result or an error, packed where it fits (`Packed.ref`: outside the job item)."""
        ...

    def census(self, space: str, name: str, now_ms: int, cap: int, *, reach: int = ...) -> Census:
        """The pending jobs of `name`, by where they stand, up to `cap`."""
        ...

    # clock: the clock's drains and looks, the stream's records, the callback sender
    def found(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Job]:
        """The jobs of `job_ids` there are, by id, without bodies (past retention or not)."""
        ...

    def snapshot(self, space: str, job_id: str) -> Snapshot | None:
        """The job as its item stands now (strongly consistent), its bodies left to read."""
        ...

    def snapshots(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Snapshot]:
        """The jobs of `job_ids` there are, by id, as snapshots."""
        ...

    def outcome(self, seen: Snapshot) -> Job:
        """The job of `seen` with its result and error, not its payload."""
        ...

    def payloads(self, space: str, seen: list[Snapshot]) -> list[bytes | None]:
        """The stored payload of each job of `seen`, in one batched read."""
        ...

    def forget_removed(self, removed: Snapshot) -> None:
        """Delete what a job retention removed left behind (lines, events, values, its key's hold)."""
        ...

    def unclaimed(
        self, space: str, name: str, ready_by_ms: int, aging_ms: int, limit: int, *, reach: int = ...
    ) -> list[Waiting]:
        """Pending jobs of `name` claimable since `ready_by_ms` or earlier, up to `limit`."""
        ...

    @property
    def deadlines(self) -> BookPort[DeadlineEntry]:
        """The deadline book: jobs to cancel when their deadlines pass."""
        ...

    @property
    def counters(self) -> CountersPort:
        """A name's counted limits: its slots and its rate."""
        ...


class BookPort(Protocol[E]):
    """A book of jobs to look at when a time comes (`shared.store.books`): the lease book,
    the deadline book."""

    def partitions(self) -> list[str]: ...

    def due(self, partition: str, now_ms: int) -> tuple[list[Bucket[E]], bool]:
        """The partition's due buckets, oldest first, a page of them; and whether more may be due."""
        ...

    def remove(self, buckets: list[Bucket[E]]) -> None: ...

    def record(self, space: str, rows: list[tuple[Any, ...]]) -> None:
        """File the entries made of `rows` in one bucket, due at the earliest of them."""
        ...


class CountersPort(Protocol):
    """A name's counted limits as they stand (`shared.store.counters`)."""

    def running(self, space: str, name: str) -> list[int]:
        """Slots held on each of the name's slot items (strongly consistent)."""
        ...

    def rate_until(self, space: str, name: str, tokens: int, interval_ms: int, now_ms: int) -> int | None:
        """When the name's rate next allows a hand-out, if it allows none now (None: it does)."""
        ...


class DeliveryStorePort(Protocol):
    """Callbacks' deliveries (`shared.store.deliveries`): one a finished job with a callback."""

    def start(self, space: str, job_id: str, now_ms: int, *, clear_mark: bool = False) -> bool:
        """Record the delivery due now; whether it is pending (False: over, or its job removed)."""
        ...

    def due(self, spaces: list[str], now_ms: int) -> list[Found]:
        """Pending deliveries due by now, and finished jobs whose delivery has no record yet."""
        ...

    def take(self, space: str, job_id: str, now_ms: int, hold_ms: int) -> Attempt | None:
        """Hold the next attempt for one sender (None: not due, or held by another)."""
        ...

    def record(
        self,
        space: str,
        job_id: str,
        *,
        attempt: int,
        state: str,
        next_at_ms: int | None,
        status: int | None,
        error: str | None,
        now_ms: int,
    ) -> None:
        """Write one attempt's result; only the sender holding that attempt may."""
        ...

    def bury(self, space: str, job_id: str, now_ms: int) -> None:
        """The job is gone: a tombstone in place of its delivery."""
        ...


class SpaceStorePort(Protocol):
    """What the clock and the stream ask of the spaces' items (`shared.store.spaces`)."""

    def all_spaces(self) -> list[str]: ...

    def names(self, space: str) -> list[str]: ...

    def heal(self, space: str, now_ms: int) -> int:
        """Give back reservations of creates that died before settling them."""
        ...

    def callback_spaces(self) -> list[str]: ...

    def register_callbacks(self, space: str) -> None:
        """List the space among those whose callback partitions the clock reads."""
        ...


__all__ = [
    "Attempt",
    "BookPort",
    "Bucket",
    "Census",
    "CountersPort",
    "DeadlineEntry",
    "DeliveryStorePort",
    "Inserted",
    "JobChange",
    "JobConflict",
    "JobStorePort",
    "KeyHolder",
    "LeaseEntry",
    "NewRecord",
    "Owner",
    "Packed",
    "ReportExtras",
    "RetryOf",
    "Snapshot",
    "SpaceStorePort",
    "Waiting",
]
