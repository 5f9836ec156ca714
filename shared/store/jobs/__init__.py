"""Job items: insert (with idempotency keys), read, list, claim and transition.

Every status change is one conditional UpdateItem on the job's own item, built from a
`shared.machine.Transition`; the ready index only finds candidates and never decides.

Split by mechanism, one module each, composed into `JobStore`:

| module | holds |
| --- | --- |
| `records` | the value types in and out, and the refusals `CounterFull`, `Contended` |
| `parts` | what every mechanism works with (table, blobs, books, counters, keys' entries) |
| `insert` | new jobs: plain, in transactions, under a reservation, holding a key or mark |
| `read` | items by id, a space's page, a name's unclaimed jobs and census, `forget` |
| `pages` | the read use cases' reads in domain values: a page of jobs, a followed job, a name's counts |
| `apply` | one transition as one conditional write, or a transaction with its counters |
| `looks` | a claim's reading of the ready shards, and its memory of racing claims |
| `room` | a claim's room: limited names' slots and rate, keys' head jobs |
| `claim` | the claim itself: choose, write-ahead to the lease book, claim one by one |

The mechanisms are mixins over `Parts` rather than collaborators: each is one mechanism's
methods over the same few parts, the claim calls `apply` through the store (so whatever
stands in for `apply`, a test's racing claim, is what it calls), and the store's public
methods stay where callers find them. What one claim carries from step to step is a value
of its own (`claim._Claim`), not state on the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.store.jobs.claim import Claims
from shared.store.jobs.insert import TRANSACTION_ACTIONS, TRANSACTION_BYTES, Inserts, transaction_groups
from shared.store.jobs.pages import Pages
from shared.store.jobs.read import Reads
from shared.store.jobs.records import (
    Census,
    ClaimPlan,
    ClaimResult,
    Contended,
    CounterFull,
    Inserted,
    JobConflict,
    KeyHolder,
    NameClaim,
    NewRecord,
    Reservation,
    RetryOf,
)

if TYPE_CHECKING:
    from shared.store.port import JobStorePort

__all__ = [
    "TRANSACTION_ACTIONS",
    "TRANSACTION_BYTES",
    "Census",
    "ClaimPlan",
    "ClaimResult",
    "Contended",
    "CounterFull",
    "Inserted",
    "JobConflict",
    "JobStore",
    "KeyHolder",
    "NameClaim",
    "NewRecord",
    "Reservation",
    "RetryOf",
    "transaction_groups",
]


class JobStore(Inserts, Reads, Pages, Claims):
    """The job items of every space: `insert`, the reads, `claim` and `apply`."""


if TYPE_CHECKING:
    _speaks_the_port: type[JobStorePort] = JobStore
