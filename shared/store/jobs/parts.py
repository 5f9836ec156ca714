"""What every mechanism of the job store works with: the table, the blob store, the lease,
deadline and timer books, the counters and keys' entries, and the claim's own contention and
randomness. `JobStore` is built once from these; each mechanism module is a mixin over them."""

from __future__ import annotations

import random

from shared.store.blobs import Blobs
from shared.store.counters import Counters
from shared.store.deadlines import DeadlineBook
from shared.store.dynamo import Dynamo
from shared.store.jobs.looks import Contention
from shared.store.keyed import KeyEntries, Widths, at_rest
from shared.store.leases import LeaseBook
from shared.store.listing import Listing
from shared.store.timers import TimerBook


class Parts:
    def __init__(
        self,
        db: Dynamo,
        blob_store: Blobs,
        leases: LeaseBook,
        *,
        widths: Widths = at_rest,
        deadlines: DeadlineBook | None = None,
        timers: TimerBook | None = None,
    ) -> None:
        """`widths`: each name's width now (`shared.spread`, through the policies' cache), where
        keys' entries are listed and moved so they spread with their name."""
        self.db = db
        self.blobs = blob_store
        self.leases = leases
        self.deadlines = deadlines or DeadlineBook(db)
        self.timers = timers or TimerBook(db)
        self._rng = random.Random()
        self._contention = Contention()
        self.counters = Counters(db)
        self.widths = widths
        self.key_entries = KeyEntries(db, self.counters, widths)
        self.listing = Listing(db)
