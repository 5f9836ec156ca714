"""The job store's value types: what goes in (a new job, a retry, a name's limits, a
reservation on the space's count) and what comes out (an insert's outcome, a key's holder,
a claimed item, a name's census), and its two refusals besides `ConditionFailed`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.machine import Hold, Job, Place
from shared.store import keys
from shared.store.blobs import Packed
from shared.store.dynamo import Item, serialize, values


@dataclass
class NewRecord:
    """A validated job ready to store, with its payload packed."""

    job: Job
    payload: Packed
    place: Place
    """Where it waits: due or later (`shared.machine.place`)."""
    width: int = keys.READY_SHARDS
    """The ready shards its name writes new jobs to (`shared.spread`)."""
    retry_ttl: int | None = None
    """A retry (`job.retry_of`): the TTL of the job it retries, which its retry mark keeps."""
    once: bool = False
    """Written at most once (a notification, `shared.notify`): its id is fixed by what it
    is about, and its item is put only if no item has its key; a repeat answers DUPLICATE
    with that id."""


@dataclass(frozen=True)
class RetryOf:
    """The job a new one retries (`shared.retry`), and that job's TTL in seconds (None:
    kept for good), which the retry mark keeps too."""

    job_id: str
    ttl: int | None


@dataclass(frozen=True)
class NameLimits:
    """A name's counted limits in force for a claim (from its policy)."""

    concurrency: int | None = None
    rate_tokens: int | None = None
    rate_interval_ms: int | None = None


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
class KeyHold:
    """An idempotency key's item and the item of the job it names (None: removed)."""

    key: Item
    job: Item | None


@dataclass
class Claimed:
    item: Item
    raw: bytes | None
    """The payload's stored JSON, left for the caller to parse (and survive) job by job."""


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
