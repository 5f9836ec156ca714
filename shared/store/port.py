"""The job store as the use cases see it: a `Protocol` over domain values, never items.

What crosses the port is `shared.machine`'s `Job` and the values below: a refused
transition is a `JobConflict` carrying the job as it stood, an idempotency key's holder
is a `KeyHolder`, and a new job's payload goes in as bytes, packed by the store
(`NewRecord.packing`). The values live with the store's others (`shared.store.jobs.records`);
`shared.store.jobs.JobStore` is the one implementation (checked against `JobStorePort`
by mypy in `shared.store.jobs`).

This is the port's first part. The store's other methods still speak items (`apply`'s
answer and its `extra`/`stored`/`held`, `get_item`, `items`,
`page`, `load`, `forget`; `insert`, whose `key_released` is asked about a `KeyHolder`, still
takes `NewRecord`s): each joins the port as its callers move to `shared/jobs/` (issue 18,
point 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from shared.machine import Job, JobStatus, Transition
from shared.store.blobs import Packed
from shared.store.counters import Owner
from shared.store.deliveries import DeliveryState
from shared.store.jobs.pages import JobPage, Watched
from shared.store.jobs.records import (
    Census,
    ClaimPlan,
    ClaimResult,
    JobConflict,
    KeyHolder,
    NameClaim,
    NewRecord,
    ReportExtras,
)
from shared.store.journal import Event, Line


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

    # reports:
    def keep_values(self, values: list[Packed]) -> None:
        """Write the packed values that live outside the job item (`Packed.ref`), before
        the transition that names them."""
        ...

    def discard_values(self, space: str, job_id: str, values: list[Packed]) -> None:
        """Remove values kept for a transition that was refused."""
        ...

    # claim:
    def claim(self, space: str, plan: ClaimPlan, *, now_ms: int) -> ClaimResult:
        """Hand out up to `plan.count` jobs of its names in order of hand-out, each won by a
        conditional write (under its name's limits, each job taking its slots): the jobs
        claimed with their payloads, and those found past their deadline or with a payload
        no claim can read, which the caller settles."""
        ...

    # reads: a page of jobs, a followed job, where a name's counted limits stand
    def jobs_page(
        self,
        space: str,
        *,
        before: str | None,
        limit: int,
        status: JobStatus | None,
        name: str | None,
        now_ms: int,
    ) -> JobPage:
        """Up to `limit` jobs newest first, ids below `before`, filtered by `status` and
        `name` if given, without bodies; with the cursor of the next page."""
        ...

    def watched(self, space: str, job_id: str, *, now_ms: int, seen: str | None = None) -> Watched | None:
        """The job as its follower sees it, with a version that changes whenever what it is
        shown does; a finished job with its result or error unless its version is `seen`.
        None: there is none, or it is past its retention."""
        ...

    def running(self, space: str, name: str) -> int:
        """The name's jobs running now, by its slots (kept under a `concurrency` only)."""
        ...

    def rate_until(self, space: str, name: str, *, tokens: int, interval_ms: int, now_ms: int) -> int | None:
        """When the name's rate next allows a hand-out, if it allows none now."""
        ...

    def key_running(self, space: str, name: str, key: str) -> int:
        """The jobs of the name's concurrency key running now."""
        ...

    def key_rate_until(
        self, space: str, name: str, key: str, *, tokens: int, interval_ms: int, now_ms: int
    ) -> int | None:
        """When the key's `perKeyRate` next allows a hand-out, if it allows none now."""
        ...


class DeliveryReads(Protocol):
    """A finished job's callback delivery, as `GET /jobs/{id}` shows it."""

    def state(self, space: str, job_id: str) -> DeliveryState | None:
        """Where the delivery stands (None: no record of it yet)."""
        ...


class SpaceListing(Protocol):
    """The spaces listed (`shared.store.spaces`), as `GET /v1/spaces` pages them."""

    def listed_after(self, after: str | None, limit: int) -> tuple[list[str], bool]:
        """Up to `limit` spaces in name order after `after`, and whether more follow."""
        ...

    def listed_among(self, spaces: frozenset[str]) -> set[str]:
        """Those of `spaces` that exist."""
        ...

    def in_flight_of(self, spaces: list[str]) -> dict[str, int | None]:
        """Each space's unfinished jobs counted against its `maxInFlight` (None: no cap)."""
        ...


__all__ = [
    "Census",
    "ClaimPlan",
    "ClaimResult",
    "DeliveryReads",
    "DeliveryState",
    "Event",
    "JobConflict",
    "JobPage",
    "JobStorePort",
    "KeyHolder",
    "Line",
    "NameClaim",
    "NewRecord",
    "Owner",
    "Packed",
    "ReportExtras",
    "SpaceListing",
    "Watched",
]


if TYPE_CHECKING:
    from shared.store.deliveries import DeliveryStore
    from shared.store.spaces import SpaceStore

    _delivery_reads: type[DeliveryReads] = DeliveryStore
    _space_listing: type[SpaceListing] = SpaceStore
