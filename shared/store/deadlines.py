"""The deadline book: which jobs to cancel when their deadlines pass.

Indexing pending jobs by deadline would cost an index write on every transition of every
job; most jobs have no deadline. Instead each create request with deadlines writes one
bucket item listing the ids (and deadlines) of its jobs that have one, before the jobs
themselves (so a crash cannot leave a job with a deadline that nothing will enforce),
keyed by the earliest of those deadlines, in a random one of `keys.DEADLINE_SHARDS`
partitions. A create without deadlines writes nothing here.

The clock reads due buckets, checks each job's own item (the item decides: the
`deadline` transition applies only to an unfinished job past its deadline), files again
the entries whose deadlines are still ahead, and removes the bucket. An entry whose job
was never written (the create died after its bucket) finds no item and is dropped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from shared.ids import IdGenerator
from shared.store import keys
from shared.store.dynamo import Dynamo

_ids = IdGenerator()


@dataclass(frozen=True)
class DeadlineEntry:
    job_id: str
    expires_at_ms: int


def encode(entries: list[DeadlineEntry]) -> str:
    """`at=id,id;at=...`: jobs of one request mostly share a deadline (an `expiresInMs`)."""
    groups: dict[int, list[str]] = {}
    for e in entries:
        groups.setdefault(e.expires_at_ms, []).append(e.job_id)
    return ";".join(f"{at}={','.join(ids)}" for at, ids in groups.items())


def decode(text: str) -> list[DeadlineEntry]:
    out: list[DeadlineEntry] = []
    for group in text.split(";"):
        at, ids = group.split("=")
        out.extend(DeadlineEntry(job_id, int(at)) for job_id in ids.split(","))
    return out


@dataclass(frozen=True)
class DeadlineBucket:
    key: dict[str, str]
    space: str
    entries: list[DeadlineEntry]


class DeadlineBook:
    PAGE = 100
    """Buckets a read answers at most (their jobs are read a batch of 100 at a time)."""

    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def record(self, space: str, deadlines: list[tuple[str, int]]) -> None:
        """File (job id, deadline) for jobs about to be created; nothing when there are none."""
        if not deadlines:
            return
        entries = [DeadlineEntry(*d) for d in deadlines]
        due = min(e.expires_at_ms for e in entries)
        key = keys.deadline_bucket(random.randrange(keys.DEADLINE_SHARDS), due, _ids.new(due))
        self.db.put(key | {"space": space, "jobs": encode(entries)})

    @staticmethod
    def partitions() -> list[str]:
        return keys.deadline_partitions()

    def due(self, partition: str, now_ms: int, limit: int = PAGE) -> tuple[list[DeadlineBucket], bool]:
        """The partition's due buckets, oldest first, at most `limit`; and whether more may be due."""
        rows, more = self.db.query(
            "pk = :pk AND sk <= :now",
            vals={":pk": partition, ":now": f"{now_ms:013d}#~"},
            limit=limit,
            # A bucket written a moment ago and missed here is found on the next tick.
            consistent=False,
        )
        found = [DeadlineBucket({"pk": r["pk"], "sk": r["sk"]}, r["space"], decode(r["jobs"])) for r in rows]
        return found, more is not None

    def remove(self, buckets: list[DeadlineBucket]) -> None:
        self.db.batch_delete([b.key for b in buckets])
