"""The lease book: which claims to check when their leases end.

Indexing running jobs by lease end would cost two index writes per claim and one per
finish. Instead each claim request writes one bucket item listing what it is about to
hand out (written before the claims, so a crash cannot strand a running job), keyed by
when the earliest of those leases ends. The clock reads due buckets, checks each job's
own item (the item decides: still running, same attempt, lease past), and re-files
jobs whose leases were renewed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from shared.ids import IdGenerator
from shared.store import keys
from shared.store.dynamo import Dynamo

_ids = IdGenerator()


@dataclass(frozen=True)
class LeaseEntry:
    job_id: str
    attempt: int
    lease_until_ms: int


def encode(entries: list[LeaseEntry]) -> str:
    """`until=id.attempt,id.attempt;until=...`: claims in one request mostly share a lease end."""
    groups: dict[int, list[str]] = {}
    for e in entries:
        groups.setdefault(e.lease_until_ms, []).append(f"{e.job_id}.{e.attempt}")
    return ";".join(f"{until}={','.join(jobs)}" for until, jobs in groups.items())


def decode(text: str) -> list[LeaseEntry]:
    out = []
    for group in text.split(";"):
        until, jobs = group.split("=")
        for job in jobs.split(","):
            job_id, attempt = job.split(".")
            out.append(LeaseEntry(job_id, int(attempt), int(until)))
    return out


class LeaseBook:
    def __init__(self, db: Dynamo, shards: int = keys.LEASE_SHARDS) -> None:
        self.db = db
        self.shards = shards

    def record(self, space: str, claims: list[tuple[str, int, int]]) -> None:
        """File (job id, attempt, lease end) for a claim about to be made."""
        if not claims:
            return
        entries = [LeaseEntry(*c) for c in claims]
        due = min(e.lease_until_ms for e in entries)
        key = keys.lease_bucket(random.randrange(self.shards), due, _ids.new(due))
        self.db.put(key | {"space": space, "jobs": encode(entries)})


@dataclass(frozen=True)
class Bucket:
    key: dict[str, str]
    space: str
    entries: list[LeaseEntry]


class DueBuckets:
    """Reading and removing buckets whose earliest lease has ended, one partition at a time
    (the clock drains the partitions side by side)."""

    PAGE = 100
    """Buckets a read answers at most: their jobs are read in one call when each bucket
    holds one (a batch read takes 100 keys), and removed in four (a batch write takes 25)."""

    def __init__(self, db: Dynamo, shards: int = keys.LEASE_SHARDS) -> None:
        self.db = db
        self.shards = shards

    def partitions(self) -> list[str]:
        return keys.lease_partitions(self.shards)

    def due(self, partition: str, now_ms: int, limit: int = PAGE) -> tuple[list[Bucket], bool]:
        """The partition's due buckets, oldest first, at most `limit`; and whether more may be due."""
        rows, more = self.db.query(
            "pk = :pk AND sk <= :now",
            vals={":pk": partition, ":now": f"{now_ms:013d}#~"},
            limit=limit,
            # A bucket written a moment ago and missed here is found on the next tick.
            consistent=False,
        )
        found = [Bucket({"pk": r["pk"], "sk": r["sk"]}, r["space"], decode(r["jobs"])) for r in rows]
        return found, more is not None

    def remove(self, buckets: list[Bucket]) -> None:
        self.db.batch_delete([b.key for b in buckets])
