"""Books of what to look at when a time comes: the lease book, the deadline book and the
timer book (`shared.store.timers`).

Indexing jobs by a time (a lease's end, a deadline) would cost index writes on their
transitions. Instead a request that gives jobs such a time writes one bucket item listing
them, before the jobs are written or handed out (so a crash cannot leave a job that nothing
will look at). The clock reads the due buckets, checks each job on its own item (the item
decides), files again what is not due yet, and removes the bucket.

**Where a bucket goes: by time.** A bucket is filed by when it is to be looked at (its
earliest entry's time), in that time's slot (`slot_ms`, the clock's tick: a minute on AWS,
a second locally), or in the filer's current slot if that time has passed. A slot has
`shards` write partitions, `{prefix}{slot's end}#{n}`, so none is hot: each process files
its first `PER_SHARD` buckets of a slot in one shard (picked at random once a process), and
the rest in each shard in turn, so a few busy processes spread as evenly as many quiet
ones, and 10,000 filings a second into one slot are about 10,000 / `shards` a partition.

**Which partitions a tick reads: the slot maps.** Before a process first files in a shard
of a slot, it marks the shard in the slot's map (one item per slot and book, all under the
partition key `BOOKS`: an UpdateItem that adds the shard, or all of them once it spreads,
and sets a new `mark`), and remembers that it did (`Slots`, for its last `MEMO_SLOTS`
slots), so it marks at most twice a slot, not once a bucket; the mark is answered before
the bucket it covers is written. A tick reads
the maps of every slot begun by then in one query, shared by both books, and queries only
the shards they name: with nothing filed, both books together cost that one call.

**When a map goes, and why there is no cursor.** A tick that drained every shard of a
slot's map to the end removes the map, on condition that its `mark` is still the one it read
(a mark since, by any process, keeps it), and only once the slot has been over for
`grace_ms` (a slot): a filing lands in a slot only while its filer's clock is in that slot
or before it, so by then none made in time can still arrive (the last look is a consistent
read). A filing whose write came back later than half that grace after its slot (a write
stuck in retries) marks the slot again (`Slots.filed`), which brings back its map if it
went: clocks must agree to within half a slot. The maps left are exactly the slots that may
still hold buckets, and nothing else records how far the books are drained: a tick an hour
late reads that hour's maps in the same one query and drains them; a tick that stopped at
its budget leaves its maps to the next; two ticks at once drain the same buckets (each
job's own conditional write refuses the second); and no late mark can fall behind a cursor.

**Far ahead: windows.** A bucket due more than `NEAR_SLOTS` slots ahead is looked at from
the start of its window of as many slots (of `NEAR_SLOTS`² slots, further still) and filed
again from there, nearer: its entries keep their own times, and the clock files again what
is not due. A deadline a year ahead is filed at most three times, and a process marks a few
hundred maps for any spread of times, not one for each minute of a year.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from shared import limits
from shared.ids import IdGenerator
from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item

_ids = IdGenerator()

PER_SHARD = 32
"""Buckets a process files in a slot in its own shard (picked at random once a process)
before it spreads over all of the slot's shards in turn: a quiet process marks one shard a
slot, a busy one two marks' worth, and ten thousand filings a second, whatever the
processes, spread evenly but for their first few in each slot."""
NEAR_SLOTS = 64
"""How many slots ahead a bucket is filed at its own time; beyond, at its window's start."""
MEMO_SLOTS = 1_024
"""The (slot, book) pairs a process remembers marking: forgetting one only marks it again."""


def system_now() -> int:
    return time.time_ns() // 1_000_000


E = TypeVar("E")
"""A book's entry: a job to look at (leases, deadlines), or a timer."""


@dataclass(frozen=True)
class Bucket(Generic[E]):
    key: dict[str, str]
    space: str
    entries: list[E]


@dataclass(frozen=True)
class SlotMap:
    """One book's map of one slot (`start` to `until`) as a tick read it: the partitions
    that may hold its buckets, and its `mark` then (it goes only if no mark came since)."""

    start: int
    until: int
    mark: str
    partitions: list[str]


@dataclass(frozen=True)
class Look:
    """What a tick reads of one book at `now_ms`: the maps of every slot begun by then."""

    now_ms: int
    maps: list[SlotMap]

    @property
    def partitions(self) -> list[str]:
        """The partitions that may hold due buckets, oldest slot first."""
        return [p for m in self.maps for p in m.partitions]


@dataclass
class _Read:
    """The maps one query answered, shared by the books that have not used it yet."""

    start: int
    generation: int
    rows: list[Item]
    taken: set[str] = field(default_factory=set)


@dataclass
class _Filing:
    """What this process filed in one slot of one book: how many buckets, which shards marked."""

    filed: int = 0
    marked: set[int] = field(default_factory=set)


class Slots:
    """The time slots the books file in: the slot maps, and this process's memory of the
    marks it made. One for all the books of a process, so a tick reads the maps once."""

    def __init__(
        self,
        db: Dynamo,
        *,
        slot_ms: int = limits.MINUTE_MS,
        shards: int = keys.BOOK_SHARDS,
        now: Callable[[], int] = system_now,
        rand: Callable[[int], int] = random.randrange,
    ) -> None:
        self.db = db
        self.slot_ms = slot_ms
        self.shards = shards
        self.now = now
        self.grace_ms = slot_ms
        """How long after its end a slot's map stays (see the module docstring)."""
        self._base = rand(shards)
        self._lock = threading.Lock()
        self._filings: OrderedDict[tuple[str, int], _Filing] = OrderedDict()
        self._generation = 0
        """Counts this process's marks: a read from before one is not shared."""
        self._read: _Read | None = None

    def start(self, ms: int) -> int:
        """The start of the slot `ms` falls in."""
        return ms - ms % self.slot_ms

    def look_at(self, due_ms: int, now_ms: int) -> int:
        """When a bucket due at `due_ms` is looked at: then, if that is at most `NEAR_SLOTS`
        slots ahead; else at the start of its window of as many slots (or of their square)."""
        for slots in (NEAR_SLOTS * NEAR_SLOTS, NEAR_SLOTS):
            window = slots * self.slot_ms
            if due_ms - now_ms > window:
                return due_ms - due_ms % window
        return due_ms

    def place(self, prefix: str, at_ms: int, now_ms: int) -> tuple[int, int]:
        """The slot (its start) and shard a bucket of `prefix` looked at `at_ms` goes to:
        `at_ms`'s slot, or the current one if that is over; marked in its map first."""
        start = self.start(max(at_ms, now_ms))
        with self._lock:
            filing = self._filing(prefix, start)
            spread = filing.filed >= PER_SHARD
            n = (self._base + filing.filed) % self.shards if spread else self._base
            filing.filed += 1
            unmarked = (set(range(self.shards)) if spread else {n}) - filing.marked
        if unmarked:
            self.mark(prefix, start, unmarked)
        return start, n

    def filed(self, prefix: str, start: int, n: int) -> None:
        """After a bucket's write came back: if it came so late after its slot that a tick
        may have removed the slot's map meanwhile, mark the slot again."""
        if self.now() >= start + self.slot_ms + self.grace_ms // 2:
            self.mark(prefix, start, {n})

    def mark(self, prefix: str, start: int, shards: set[int]) -> None:
        """`shards` may hold buckets of the slot at `start`: added to its map, with a new mark."""
        self.db.update(
            keys.book_map(start, prefix),
            "ADD #shards :n SET #mark = :mark, #until = :until",
            names={"#shards": "shards", "#mark": "mark", "#until": "until"},
            vals={":n": shards, ":mark": _ids.new(self.now()), ":until": start + self.slot_ms},
        )
        with self._lock:
            self._filing(prefix, start).marked |= shards
            self._generation += 1

    def _filing(self, prefix: str, start: int) -> _Filing:
        """Under the lock: this process's filing in a slot, the oldest forgotten past `MEMO_SLOTS`."""
        key = (prefix, start)
        filing = self._filings.get(key)
        if filing is None:
            filing = self._filings[key] = _Filing()
            if len(self._filings) > MEMO_SLOTS:
                self._filings.popitem(last=False)
        return filing

    def maps(self, prefix: str, now_ms: int) -> list[SlotMap]:
        """The maps of `prefix`'s slots begun by `now_ms`. One query serves every book once:
        a book that asks again, a later slot, or a mark made here since, reads again."""
        current = self.start(now_ms)
        with self._lock:
            kept, generation = self._read, self._generation
            shared = (
                kept is not None
                and (kept.start, kept.generation) == (current, generation)
                and prefix not in kept.taken
            )
            if kept is not None and shared:
                kept.taken.add(prefix)
                rows = kept.rows
        if not shared:
            rows = self._read_maps(now_ms)
            with self._lock:
                self._read = _Read(current, generation, rows, {prefix})
        found = []
        for row in rows:
            start, of = keys.book_map_start(row["sk"])
            if of == prefix:
                until = int(row["until"])
                shards = [keys.book_partition(prefix, until, n) for n in sorted(row.get("shards", ()))]
                found.append(SlotMap(start, until, str(row["mark"]), shards))
        return found

    def _read_maps(self, now_ms: int) -> list[Item]:
        rows: list[Item] = []
        start: dict[str, Any] | None = None
        while True:
            page, start = self.db.query(
                "pk = :pk AND sk <= :begun",
                vals={":pk": keys.BOOK_MAPS, ":begun": keys.book_maps_bound(now_ms)},
                # A mark answered before the tick began is seen by it.
                consistent=True,
                start=start,
            )
            rows += page
            if start is None:
                return rows

    def settled(self, until: int, now_ms: int) -> bool:
        """Whether the slot ending at `until` is over by `grace_ms`: no filing made in time
        can arrive in it any more, so its map may go once its shards are empty."""
        return now_ms >= until + self.grace_ms

    def retire(self, prefix: str, found: SlotMap) -> None:
        """Remove a map whose shards were all found empty, unless a mark came since."""
        # Marked again since (or removed by another tick): the next tick looks again.
        with contextlib.suppress(ConditionFailed):
            self.db.delete(
                keys.book_map(found.start, prefix),
                condition="#mark = :mark",
                names={"#mark": "mark"},
                vals={":mark": found.mark},
            )


class Book(Generic[E]):
    """One book: its prefix, the slots it files in, and how its entries are written in a
    bucket (`encode`, `decode`) and when each is due (`due_of`)."""

    PAGE = 100
    """Buckets a read answers at most: their jobs are read in one call when each bucket
    holds one (a batch read takes 100 keys), and removed in four (a batch write takes 25)."""

    def __init__(
        self,
        slots: Slots,
        *,
        prefix: str,
        entry: Callable[..., E],
        encode: Callable[[list[E]], str],
        decode: Callable[[str], list[E]],
        due_of: Callable[[E], int],
    ) -> None:
        self.slots = slots
        self.db = slots.db
        self.prefix = prefix
        self.entry = entry
        self.encode = encode
        self.decode = decode
        self.due_of = due_of

    @property
    def shards(self) -> int:
        """The write shards of each slot."""
        return self.slots.shards

    def record(self, space: str, rows: list[tuple[Any, ...]]) -> None:
        """File the entries made of `rows` in one bucket, looked at when the earliest of them
        is due (or its window's start, far ahead); nothing when there are none."""
        if not rows:
            return
        entries = [self.entry(*row) for row in rows]
        now = self.slots.now()
        at = self.slots.look_at(min(self.due_of(e) for e in entries), now)
        start, n = self.slots.place(self.prefix, at, now)
        key = keys.book_slot_bucket(self.prefix, start + self.slots.slot_ms, n, at, _ids.new(at))
        self.db.put(key | {"space": space, "jobs": self.encode(entries)})
        self.slots.filed(self.prefix, start, n)

    def look(self, now_ms: int) -> Look:
        """The partitions a tick at `now_ms` drains (`due`), from its slots' maps; once
        drained, `drained` says which it emptied."""
        return Look(now_ms, self.slots.maps(self.prefix, now_ms))

    def due(self, partition: str, now_ms: int, limit: int = PAGE) -> tuple[list[Bucket[E]], bool]:
        """The partition's due buckets, oldest first, at most `limit`; and whether more may be due."""
        settled = self.slots.settled(keys.book_partition_until(self.prefix, partition), now_ms)
        rows, more = self.db.query(
            "pk = :pk AND sk <= :now",
            vals={":pk": partition, ":now": f"{now_ms:013d}#~"},
            limit=limit,
            # A bucket written a moment ago and missed here is found on the next tick; but
            # the look that may let the slot's map go sees every bucket written.
            consistent=settled,
        )
        found = [Bucket({"pk": r["pk"], "sk": r["sk"]}, r["space"], self.decode(r["jobs"])) for r in rows]
        return found, more is not None

    def remove(self, buckets: list[Bucket[E]]) -> None:
        self.db.batch_delete([b.key for b in buckets])

    def drained(self, look: Look, partitions: list[str]) -> None:
        """`partitions` of `look` were drained to the end (no due bucket left): the maps of
        settled slots whose partitions all were go (unless marked since)."""
        emptied = set(partitions)
        for found in look.maps:
            if self.slots.settled(found.until, look.now_ms) and emptied.issuperset(found.partitions):
                self.slots.retire(self.prefix, found)
