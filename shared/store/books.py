"""Books of jobs to look at when a time comes: the lease book and the deadline book.

Indexing jobs by a time (a lease's end, a deadline) would cost index writes on their
transitions. Instead a request that gives jobs such a time writes one bucket item listing
them, keyed by the earliest of those times, in a random one of the book's partitions
(so no partition every space shares is busy), before the jobs are written or handed out
(so a crash cannot leave a job that nothing will look at). The clock reads due buckets,
partitions side by side, checks each job on its own item (the item decides), files
again what is not due yet, and removes the bucket.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from shared.ids import IdGenerator
from shared.store import keys
from shared.store.dynamo import Dynamo

_ids = IdGenerator()


class Entry(Protocol):
    """What a book's entry names: the job to look at."""

    @property
    def job_id(self) -> str: ...


E = TypeVar("E", bound=Entry)


@dataclass(frozen=True)
class Bucket(Generic[E]):
    key: dict[str, str]
    space: str
    entries: list[E]


class Book(Generic[E]):
    """One book: its partitions (`{prefix}{n}`, n of `shards`), and how its entries are
    written in a bucket (`encode`, `decode`) and when each is due (`due_of`)."""

    PAGE = 100
    """Buckets a read answers at most: their jobs are read in one call when each bucket
    holds one (a batch read takes 100 keys), and removed in four (a batch write takes 25)."""

    def __init__(
        self,
        db: Dynamo,
        *,
        prefix: str,
        shards: int,
        entry: Callable[..., E],
        encode: Callable[[list[E]], str],
        decode: Callable[[str], list[E]],
        due_of: Callable[[E], int],
    ) -> None:
        self.db = db
        self.prefix = prefix
        self.shards = shards
        self.entry = entry
        self.encode = encode
        self.decode = decode
        self.due_of = due_of

    def record(self, space: str, rows: list[tuple[Any, ...]]) -> None:
        """File the entries made of `rows` in one bucket, due at the earliest of them;
        nothing when there are none."""
        if not rows:
            return
        entries = [self.entry(*row) for row in rows]
        due = min(self.due_of(e) for e in entries)
        key = keys.book_bucket(self.prefix, random.randrange(self.shards), due, _ids.new(due))
        self.db.put(key | {"space": space, "jobs": self.encode(entries)})

    def partitions(self) -> list[str]:
        return keys.book_partitions(self.prefix, self.shards)

    def due(self, partition: str, now_ms: int, limit: int = PAGE) -> tuple[list[Bucket[E]], bool]:
        """The partition's due buckets, oldest first, at most `limit`; and whether more may be due."""
        rows, more = self.db.query(
            "pk = :pk AND sk <= :now",
            vals={":pk": partition, ":now": f"{now_ms:013d}#~"},
            limit=limit,
            # A bucket written a moment ago and missed here is found on the next tick.
            consistent=False,
        )
        found = [Bucket({"pk": r["pk"], "sk": r["sk"]}, r["space"], self.decode(r["jobs"])) for r in rows]
        return found, more is not None

    def remove(self, buckets: list[Bucket[E]]) -> None:
        self.db.batch_delete([b.key for b in buckets])
