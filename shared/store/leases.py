"""The lease book: which claims to check when their leases end (`shared.store.books`).

Each claim request files one bucket listing what it is about to hand out (before the
claims, so a crash cannot strand a running job). The clock checks each job's own item
(still running, same attempt, lease past) and files again the jobs whose leases were
renewed.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.store import keys
from shared.store.books import Book, Bucket, Slots
from shared.store.dynamo import Dynamo


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


LeaseBucket = Bucket[LeaseEntry]


class LeaseBook(Book[LeaseEntry]):
    """`record(space, [(job id, attempt, lease end), ...])` for a claim about to be made."""

    def __init__(self, db: Dynamo, slots: Slots | None = None) -> None:
        """`slots`: the slots this process's books share (one read of their maps a tick);
        None: slots of its own, at AWS's tick and shards."""
        super().__init__(
            slots or Slots(db),
            prefix=keys.LEASE_PREFIX,
            entry=LeaseEntry,
            encode=encode,
            decode=decode,
            due_of=lambda e: e.lease_until_ms,
        )
