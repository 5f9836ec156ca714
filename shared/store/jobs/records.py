"""The job store's value types: what goes in (a new job, a retry, a claim's terms, a
reservation on the space's count) and what comes out (an insert's outcome, a key's holder,
a claim's jobs, a name's census), and its two refusals besides `ConditionFailed`."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.job import Job, JobStatus, Place, Progress
from shared.machine import Hold
from shared.store import keys
from shared.store.blobs import ITEM_BUDGET, Packed, pack
from shared.store.codec import approximate_size, job_from_item, job_item, ttl_seconds
from shared.store.dynamo import ConditionFailed, Item, serialize, values


@dataclass(frozen=True)
class ReportExtras:
    """What a worker's report adds to its transition's write: its progress, how many lines
    it brings (counted on the job), and whether it brings an event (counted too, refused
    once the job has `max_events`)."""

    progress: Progress | None = None
    lines: int = 0
    event: bool = False
    max_events: int = 0


@dataclass
class NewRecord:
    """A validated job ready to store, with its payload packed."""

    job: Job
    payload: Packed
    place: Place
    """Where it waits: due or later (`shared.job.place`)."""
    width: int = keys.READY_SHARDS
    """The ready shards its name writes new jobs to (`shared.spread`)."""
    retry_ttl: int | None = None
    """A retry (`job.retry_of`): the TTL of the job it retries, which its retry mark keeps."""
    once: bool = False
    """Written at most once (a notification, `shared.notify`): its id is fixed by what it
    is about, and its item is put only if no item has its key; a repeat answers DUPLICATE
    with that id."""

    @classmethod
    def packing(
        cls,
        space: str,
        job: Job,
        raw: bytes,
        place: Place,
        width: int = keys.READY_SHARDS,
        *,
        retry_ttl: int | None = None,
        once: bool = False,
    ) -> NewRecord:
        """A new job whose payload, `raw` (UTF-8 JSON), the store packs: in the job's item
        while it fits beside the job, else in a side item or S3 (`shared.store.blobs.pack`)."""
        room = ITEM_BUDGET - approximate_size(job_item(job, {"payloadBytes": len(raw)}, place, width))
        payload = pack(space, job.id, "payload", raw, room=room)
        return cls(job, payload, place, width, retry_ttl=retry_ttl, once=once)


@dataclass(frozen=True)
class RetryOf:
    """The job a new one retries (`shared.retry`), and that job's TTL in seconds (None:
    kept for good), which the retry mark keeps too."""

    job_id: str
    ttl: int | None

    @classmethod
    def of(cls, job: Job) -> RetryOf:
        """A retry of `job`: its mark is kept as long as `job` is (its purge time, as TTL's seconds)."""
        return cls(job.id, None if job.purge_at_ms is None else ttl_seconds(job.purge_at_ms))


@dataclass(frozen=True)
class NameClaim:
    """One name's terms in a claim, from its policy and its spread: the aging interval its
    jobs are ordered by, how many of its ready shards are read, and the limits each job
    handed out is counted under."""

    aging_ms: int
    reach: int = keys.READY_SHARDS
    """The ready shards read (`shared.spread`): more than at rest only for a busy name."""
    concurrency: int | None = None
    rate: tuple[int, int] | None = None
    """(tokens, interval in ms): at most that many hand-outs an interval, on average."""
    per_key_concurrency: int | None = None
    per_key_rate: tuple[int, int] | None = None
    """(tokens, interval in ms), for each of the name's concurrency keys."""

    @property
    def limited(self) -> bool:
        """Whether a claim reckons the name's room first (its free slots, its rate now)."""
        return self.concurrency is not None or self.rate is not None


@dataclass(frozen=True)
class ClaimPlan:
    """A claim's terms: its names (a paused one is left out by the caller), how many jobs at
    most, their lease (None: each job's own timeout), and the payload bytes it may hand out
    as stored (the first job goes whatever its size)."""

    names: Mapping[str, NameClaim]
    count: int
    lease_ms: int | None
    payload_budget: int


@dataclass(frozen=True)
class ClaimResult:
    """What a claim won and what it found on the way, for the caller to settle: the store
    neither answers nor cancels."""

    claimed: list[Job] = field(default_factory=list)
    """In order of hand-out, each running under its new lease, with its payload."""
    expired: list[Job] = field(default_factory=list)
    """Candidates past their deadline, never handed out (the claim's own write refused them),
    as that refusal found them, holds and all: for the caller to cancel."""
    unreadable: list[Job] = field(default_factory=list)
    """Won, but their stored payload is not JSON this process can parse (one stored before
    nesting was bounded): running, without a payload, for the caller to fail."""


class CounterFull(Exception):
    """A transition's hold could not be taken: its counter is at its cap."""

    def __init__(self, hold: Hold) -> None:
        super().__init__(f"{hold.tag} is full")
        self.hold = hold


class Contended(RuntimeError):
    """A transaction kept meeting others on the same items: nothing of it applied."""


@dataclass(frozen=True)
class Reservation:
    """Room a create took on its space's `maxInFlight` (`SpaceStore.reserve`) before writing
    its jobs: each job's own transaction turns one unit of it into the job's hold."""

    space: str
    attribute: str
    count: int

    def use(self, n: int) -> dict[str, Any]:
        """The transaction action that turns `n` units into holds."""
        return {
            "Update": {
                "Key": serialize(keys.inflight(self.space)),
                "UpdateExpression": "ADD #r :minus",
                "ConditionExpression": "#r >= :n",
                "ExpressionAttributeNames": {"#r": self.attribute},
                "ExpressionAttributeValues": values({":minus": -n, ":n": n}),
            }
        }


@dataclass
class Inserted:
    id: str
    new: bool


@dataclass
class Census:
    """Pending jobs of one name, by where they stand (`JobStore.census`)."""

    pending: int = 0
    claimable: int = 0
    first_time: int = 0
    """Not claimable yet, never handed out (a delay)."""
    retrying: int = 0
    """Not claimable yet, waiting before a retry."""
    oldest_claimable_at_ms: int | None = None
    capped: bool = False

    def count(self, row: Item, now_ms: int) -> None:
        ready = int(row.get("readyAtMs") or 0)
        self.pending += 1
        if keys.is_due(row["gsk"]) or ready <= now_ms:
            self.claimable += 1
            oldest = self.oldest_claimable_at_ms
            self.oldest_claimable_at_ms = ready if oldest is None else min(oldest, ready)
        elif row.get("attempt", 0) == 0:
            self.first_time += 1
        else:
            self.retrying += 1


class JobConflict(ConditionFailed):
    """A transition's guard did not hold: `current` is the job as it stood (None: there is
    no such job).

    Until every caller reads `current`, it is also the `ConditionFailed` it replaces, with
    the item as it stood (`item`): `except ConditionFailed` still catches it."""

    def __init__(self, space: str, item: Item | None) -> None:
        super().__init__(item)
        self.space = space

    @functools.cached_property
    def current(self) -> Job | None:
        """The job as the refusal found it, without its payload, result or error."""
        return None if self.item is None else job_from_item(self.space, self.item)


@dataclass(frozen=True)
class KeyHolder:
    """The job holding an idempotency key: its id, and, while its item is there, its status
    (None: retention removed it) and when it finished (from the key's item once removed)."""

    job_id: str
    status: JobStatus | None
    finished_at_ms: int | None

    @classmethod
    def of(cls, key: Item, job: Item | None) -> KeyHolder:
        """From a key's item and its job's item (None: removed)."""
        if job is None:
            finished = key.get("finishedAtMs")
            return cls(str(key["jobId"]), None, None if finished is None else int(finished))
        finished = job.get("finishedAtMs")
        return cls(str(key["jobId"]), JobStatus(job["status"]), None if finished is None else int(finished))

    def released(self, key_window_ms: int, now_ms: int) -> bool:
        """A key is held while its job is unfinished, and for the key window after it
        finished, even when retention has hidden or removed the job by then (a removed
        job's finish time is copied onto the key item by the stream's cleanup: until then
        the key stays held, the window not known to have passed)."""
        if self.status is not None and not self.status.is_final:
            return False
        if self.finished_at_ms is None:
            return False
        return self.finished_at_ms + key_window_ms <= now_ms


@dataclass(frozen=True)
class Waiting:
    """A pending job as a name's ready lanes list it (`JobStore.unclaimed`): its id, and
    its concurrency key, whose counts it holds with its name's."""

    job_id: str
    concurrency_key: str | None = None
