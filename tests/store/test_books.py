"""The lease and deadline books by time slot (`shared.store.books`): what a tick costs, and
that nothing filed is lost or stranded, whatever the ticks do (late, twice, at once, killed
between two writes) and whenever the filings land.

Most tests drive a book as the clock does (`drain`: the look, the due pages, each handled
then removed, the maps of what was drained let go); the rest go through the clock itself
(`Sweeper.expire_leases`, `Sweeper.cancel_past_deadline`) on real jobs. DynamoDB calls are
counted at the client, on whichever engine the tests run."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from shared import limits
from shared.clock import ManualClock
from shared.ids import IdGenerator
from shared.machine import JobStatus
from shared.runtime import Runtime
from shared.store import books, keys
from shared.store.books import Book, Bucket, Slots
from shared.store.leases import LeaseBook, LeaseEntry
from shared.sweeper import TickReport
from tests.store.shelf import MINUTE, Shelf

SPACE = "books"
HOUR = 60 * MINUTE
ids = IdGenerator()


class Killed(BaseException):
    """The process died (no `except Exception` in the service can catch it)."""


class Calls:
    """Counts the calls made through a DynamoDB client, by operation."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.made: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.made[name] += 1
            return attr(*args, **kwargs)

        return call


@contextmanager
def counted(rt: Runtime) -> Iterator[Counter[str]]:
    """The DynamoDB calls the runtime makes inside, by operation."""
    calls = Calls(rt.db.client)
    rt.db.client = calls
    try:
        yield calls.made
    finally:
        rt.db.client = calls.client


def drain(book: Book[Any], now_ms: int, handle: Callable[[Bucket[Any]], None] | None = None) -> list[Any]:
    """One tick's drain of `book` at `now_ms`, as the clock makes it (`Sweeper._drain_book`):
    the entries handled, in order."""
    look = book.look(now_ms)
    handled: list[Any] = []
    drained = []
    for partition in look.partitions:
        more = True
        while more:
            page, more = book.due(partition, now_ms)
            for bucket in page:
                if handle is not None:
                    handle(bucket)
                handled += bucket.entries
            book.remove(page)
        drained.append(partition)
    book.drained(look, drained)
    return handled


def lease(book: LeaseBook, until_ms: int) -> LeaseEntry:
    """File one lease ending at `until_ms` (a job of its own), as a claim does."""
    entry = LeaseEntry(ids.new(until_ms), 1, until_ms)
    book.record(SPACE, [(entry.job_id, entry.attempt, entry.lease_until_ms)])
    return entry


def file_in_bulk(book: LeaseBook, ends: list[int]) -> None:
    """One bucket a lease end, filed as `record` files it (its slot, its shard, the marks),
    the buckets written 25 a call."""
    slots, now = book.slots, book.slots.now()
    items = []
    for until in ends:
        at = slots.look_at(until, now)
        start, n = slots.place(book.prefix, at, now)
        key = keys.book_slot_bucket(book.prefix, start + slots.slot_ms, n, at, ids.new(at))
        items.append(key | {"space": SPACE, "jobs": book.encode([LeaseEntry(ids.new(until), 1, until)])})
    book.db.batch_put(items)


def book_items(rt: Runtime) -> list[dict[str, Any]]:
    """Every bucket and map of the books (a scan: tests only)."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"TableName": rt.table}
    while True:
        answer = rt.dynamodb.scan(**params)
        found += [
            {"pk": i["pk"]["S"], "sk": i["sk"]["S"]}
            for i in answer.get("Items", [])
            if i["pk"]["S"].startswith((keys.LEASE_PREFIX, keys.DEADLINE_PREFIX, keys.BOOK_MAPS))
        ]
        if "LastEvaluatedKey" not in answer:
            return found
        params["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def idle_tick(rt: Runtime) -> Counter[str]:
    """The calls of both books' part of one tick of the clock."""
    with counted(rt) as calls:
        rt.sweeper.cancel_past_deadline(TickReport())
        rt.sweeper.expire_leases(TickReport())
    return calls


# -- what a tick costs ---------------------------------------------------------------


@pytest.mark.parametrize("filed", [0, 1, 10_000])
def test_an_idle_tick_reads_both_books_in_one_query_however_much_is_filed(
    rt: Runtime, clock: ManualClock, filed: int
) -> None:
    """Buckets filed for later (an hour's worth, over every shard of their slots) cost an
    idle tick nothing: it reads the maps of the slots begun by now, once for both books."""
    now = clock.now_ms()
    file_in_bulk(rt.leases, [now + 2_000 + i * HOUR // max(filed, 1) for i in range(filed)])
    assert len(book_items(rt)) >= filed
    calls = idle_tick(rt)
    assert sum(calls.values()) <= 3 and calls == {"query": 1}, calls


def test_a_tick_after_work_lets_the_maps_go_and_the_next_costs_one_query(
    rt: Runtime, clock: ManualClock
) -> None:
    now = clock.now_ms()
    entries = [lease(rt.leases, now + 1_000 * i) for i in range(1, 6)]
    clock.advance(5_000)
    assert sorted(drain(rt.leases, clock.now_ms()), key=lambda e: e.lease_until_ms) == entries
    clock.advance(2_000)  # the last slot is settled: its map may go
    drain(rt.leases, clock.now_ms())
    assert book_items(rt) == []
    assert idle_tick(rt) == {"query": 1}


# -- precision ---------------------------------------------------------------------------


def test_a_due_bucket_is_found_by_the_first_tick_at_its_time_and_not_before(
    rt: Runtime, clock: ManualClock
) -> None:
    until = clock.now_ms() + 5_500  # half way into its slot
    entry = lease(rt.leases, until)
    assert drain(rt.leases, until - 1) == [], "its slot has begun, but it is not due"
    assert drain(rt.leases, until) == [entry]
    assert drain(rt.leases, until + 1) == [], "removed"


def test_a_filing_due_in_the_past_goes_to_the_current_slot_and_the_next_tick_finds_it(
    rt: Runtime, clock: ManualClock
) -> None:
    clock.advance(10_000)
    drain(rt.leases, clock.now_ms())  # every slot up to now drained
    entry = lease(rt.leases, clock.now_ms() - 10 * MINUTE)
    [found] = rt.leases.look(clock.now_ms()).maps
    assert found.start == rt.leases.slots.start(clock.now_ms())
    assert drain(rt.leases, clock.now_ms()) == [entry]


def test_a_tick_an_hour_late_finds_every_bucket_of_the_hour(rt: Runtime, clock: ManualClock) -> None:
    now = clock.now_ms()
    entries = [lease(rt.leases, now + i * 10_000) for i in range(1, 361)]
    clock.advance(HOUR + 2_000)
    assert sorted(drain(rt.leases, clock.now_ms()), key=lambda e: e.lease_until_ms) == entries
    assert book_items(rt) == [], "every slot of the hour drained and let go"


def test_a_tick_an_hour_late_expires_every_lease_of_the_hour(shelf: Shelf, rt: Runtime) -> None:
    """Through the clock, on real claims: one every five minutes, each a minute's lease."""
    claimed = []
    for _ in range(12):
        shelf.put()
        claimed += shelf.claim(count=1)
        shelf.clock.advance(5 * MINUTE)
    report = TickReport()
    rt.sweeper.expire_leases(report)
    assert report.expired == len(claimed) == 12
    assert {shelf.job(job_id).failures for job_id in claimed} == {1}
    assert book_items(rt) == []
    assert idle_tick(rt) == {"query": 1}


def test_a_deadline_a_year_ahead_is_filed_nearer_twice_and_cancelled_at_its_time(
    shelf: Shelf, rt: Runtime
) -> None:
    """Far ahead, a bucket is looked at from its window's start and filed again from there."""
    shelf.clock.advance(1_234)  # a deadline on no window's boundary
    job_id = shelf.put(expiresInMs=limits.YEAR_MS)
    deadline = shelf.now() + limits.YEAR_MS
    looks = []
    while shelf.job(job_id).status == JobStatus.PENDING:
        [bucket] = [i for i in book_items(rt) if i["pk"].startswith(keys.DEADLINE_PREFIX)]
        at = int(bucket["sk"].split("#")[0])
        looks.append(at)
        shelf.clock.advance(at - shelf.now())
        rt.sweeper.cancel_past_deadline(TickReport())
    assert looks[-1] == deadline and len(looks) == 3, looks
    assert shelf.job(job_id).finished_at_ms == deadline


# -- nothing lost ----------------------------------------------------------------------------


def test_a_filing_made_while_a_tick_runs_is_found_by_the_next(rt: Runtime, clock: ManualClock) -> None:
    now = clock.now_ms()
    first = lease(rt.leases, now)
    during: list[LeaseEntry] = []

    def file_another(bucket: Bucket[Any]) -> None:
        if not during:  # in the current slot, due now, after the tick looked
            during.append(lease(rt.leases, now))

    assert drain(rt.leases, now, file_another) == [first]
    assert drain(rt.leases, now) == during


def test_a_filing_in_a_new_slot_while_a_tick_runs_is_found_by_the_next(
    rt: Runtime, clock: ManualClock
) -> None:
    """The tick's look named no shard of that slot: its map came after."""
    now = clock.now_ms()
    first = lease(rt.leases, now)
    later: list[LeaseEntry] = []

    def file_in_the_next_slot(bucket: Bucket[Any]) -> None:
        if not later:
            later.append(lease(rt.leases, now + 1_000))

    assert drain(rt.leases, now, file_in_the_next_slot) == [first]
    clock.advance(1_000)
    assert drain(rt.leases, clock.now_ms()) == later


def test_a_write_that_lands_after_its_slots_map_went_marks_the_slot_again(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process files in a slot it has marked already (no mark this time), but its write
    lands late: a tick meanwhile found the slot's shards empty and let its map go."""
    now = clock.now_ms()
    first = lease(rt.leases, now)
    assert drain(rt.leases, now) == [first]
    put = rt.db.put

    def late(item: dict[str, Any], **kw: Any) -> None:
        if item["pk"].startswith(keys.LEASE_PREFIX):
            clock.advance(2_000)  # the slot is settled, and a tick lets its map go
            assert drain(rt.leases, clock.now_ms()) == []
            assert book_items(rt) == []
        put(item, **kw)

    monkeypatch.setattr(rt.db, "put", late)
    second = lease(rt.leases, now)
    monkeypatch.undo()
    assert drain(rt.leases, clock.now_ms()) == [second]


def test_a_repeated_tick_and_two_ticks_at_once_hand_out_every_entry(rt: Runtime, clock: ManualClock) -> None:
    now = clock.now_ms()
    entries = {lease(rt.leases, now + 1_000 * (i % 3)) for i in range(30)}
    clock.advance(3_000)
    both = threading.Barrier(2, timeout=30)
    seen: list[list[Any]] = [[], []]

    def tick(k: int) -> None:
        # Each tick waits, with the first page read, for the other to read it too.
        first_page = [True]

        def wait_for_the_other(bucket: Bucket[Any]) -> None:
            if first_page[0]:
                first_page[0] = False
                both.wait()

        seen[k] = drain(rt.leases, clock.now_ms(), wait_for_the_other)

    threads = [threading.Thread(target=tick, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    handled = Counter(seen[0] + seen[1])
    assert set(handled) == entries and set(handled.values()) <= {1, 2}
    assert drain(rt.leases, clock.now_ms()) == [], "the same tick again: nothing left"
    clock.advance(2_000)
    drain(rt.leases, clock.now_ms())
    assert book_items(rt) == []


def test_a_crash_between_the_mark_and_the_filing_loses_nothing(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim dies after the mark; its retry, in another process, files in another shard."""
    now = clock.now_ms()
    put = rt.db.put

    def killed(item: dict[str, Any], **kw: Any) -> None:
        raise Killed

    monkeypatch.setattr(rt.db, "put", killed)
    with pytest.raises(Killed):
        lease(rt.leases, now + 1_000)
    monkeypatch.setattr(rt.db, "put", put)
    slots = rt.leases.slots
    retry = LeaseBook(
        rt.db,
        Slots(rt.db, slot_ms=slots.slot_ms, now=clock.now_ms, rand=lambda n: (slots._base + 1) % n),
    )
    entry = lease(retry, now + 1_000)
    clock.advance(1_000)
    [found] = rt.leases.look(clock.now_ms()).maps
    assert len(found.partitions) == 2, "both shards marked, one of them empty"
    assert drain(rt.leases, clock.now_ms()) == [entry]
    clock.advance(2_000)
    drain(rt.leases, clock.now_ms())
    assert book_items(rt) == [], "the empty shard's map went with the other"


def test_a_crash_between_handling_and_removal_hands_the_page_out_again(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = clock.now_ms()
    entries = [lease(rt.leases, now) for _ in range(3)]
    remove = rt.leases.remove

    def killed(buckets: list[Bucket[Any]]) -> None:
        raise Killed

    monkeypatch.setattr(rt.leases, "remove", killed)
    handled: list[Any] = []
    with pytest.raises(Killed):
        drain(rt.leases, now, lambda bucket: handled.extend(bucket.entries))
    monkeypatch.setattr(rt.leases, "remove", remove)
    assert sorted(handled, key=str) == sorted(entries, key=str)
    clock.advance(2_000)  # the next tick, its slot settled by then
    assert sorted(drain(rt.leases, clock.now_ms()), key=str) == sorted(entries, key=str)
    assert book_items(rt) == []


def test_a_tick_stopped_at_its_budget_leaves_the_map_for_the_next(rt: Runtime, clock: ManualClock) -> None:
    now = clock.now_ms()
    entries = [lease(rt.leases, now) for _ in range(3)]
    clock.advance(2_000)
    look = rt.leases.look(clock.now_ms())
    [partition] = look.partitions
    page, more = rt.leases.due(partition, clock.now_ms(), limit=2)
    rt.leases.remove(page)
    assert more
    rt.leases.drained(look, [])  # stopped with more due: not drained to the end
    assert len(rt.leases.look(clock.now_ms()).maps) == 1
    rest = drain(rt.leases, clock.now_ms())
    assert sorted([e for b in page for e in b.entries] + rest, key=str) == sorted(entries, key=str)
    assert book_items(rt) == []


# -- spreading the writes -------------------------------------------------------------------


class MarksOnly:
    """Stands in for the table where only marks are written: counts them."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, set[int]]] = []

    def update(self, key: dict[str, str], expression: str, **kw: Any) -> dict[str, Any]:
        self.marks.append((key["sk"], kw["vals"][":n"]))
        return {}


def test_ten_thousand_filings_in_one_slot_spread_over_its_shards() -> None:
    """A hundred processes filing a hundred buckets each into one slot, and one process
    filing ten thousand: no shard takes much more than its even share, and a process marks
    twice (its own shard, then all of them), not once a bucket."""
    now, rng = 1_790_000_000_000, random.Random(19)
    fleet = [Slots(MarksOnly(), now=lambda: now, rand=rng.randrange) for _ in range(100)]  # type: ignore[arg-type]
    placed = Counter(slots.place(keys.LEASE_PREFIX, now, now)[1] for slots in fleet for _ in range(100))
    even = 10_000 / keys.BOOK_SHARDS
    assert len(placed) == keys.BOOK_SHARDS and max(placed.values()) <= 2 * even, placed
    assert {len(slots.db.marks) for slots in fleet} == {2}  # type: ignore[attr-defined]
    busy = Slots(MarksOnly(), now=lambda: now)  # type: ignore[arg-type]
    alone = Counter(busy.place(keys.LEASE_PREFIX, now, now)[1] for _ in range(10_000))
    assert len(alone) == keys.BOOK_SHARDS and max(alone.values()) <= 1.2 * even, alone
    assert len(busy.db.marks) == 2  # type: ignore[attr-defined]


def test_a_process_marks_a_few_hundred_maps_for_deadlines_spread_over_a_year() -> None:
    now, db = 1_790_000_000_000, MarksOnly()
    slots = Slots(db, now=lambda: now)  # type: ignore[arg-type]
    for i in range(20_000):
        due = now + 1 + i * (limits.YEAR_MS // 20_000)
        slots.place(keys.DEADLINE_PREFIX, slots.look_at(due, now), now)
    # Two marks a window of 4,096 slots (its own shard, then all), one a nearer one: not 20,000.
    assert len(db.marks) < 400, len(db.marks)


def test_the_memo_never_keeps_a_process_from_marking_a_slot_it_forgot(
    rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(books, "MEMO_SLOTS", 2)
    now = clock.now_ms()
    for i in range(4):
        lease(rt.leases, now + 1_000 * i)
    with counted(rt) as calls:
        entry = lease(rt.leases, now)  # its slot forgotten: marked again
    assert calls == {"update_item": 1, "put_item": 1}
    assert entry in drain(rt.leases, now)
