"""The deadline book: which jobs to cancel when their deadlines pass (`shared.store.books`).

Most jobs have no deadline: a create request files one bucket for those of its jobs
that have one, before the jobs themselves, and a create without deadlines writes
nothing here.

The clock reads due buckets, checks each job's own item (the item decides: the
`deadline` transition applies only to an unfinished job past its deadline), files again
the entries whose deadlines are still ahead, and removes the bucket. An entry whose job
was never written (the create died after its bucket) finds no item and is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.store import keys
from shared.store.books import Book, Bucket, Slots
from shared.store.dynamo import Dynamo


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


DeadlineBucket = Bucket[DeadlineEntry]


class DeadlineBook(Book[DeadlineEntry]):
    """`record(space, [(job id, deadline), ...])` for jobs about to be created."""

    def __init__(self, db: Dynamo, slots: Slots | None = None) -> None:
        """`slots`: the slots this process's books share (one read of their maps a tick);
        None: slots of its own, at AWS's tick and shards."""
        super().__init__(
            slots or Slots(db),
            prefix=keys.DEADLINE_PREFIX,
            entry=DeadlineEntry,
            encode=encode,
            decode=decode,
            due_of=lambda e: e.expires_at_ms,
        )
