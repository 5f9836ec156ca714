"""Counts and retention: a name's census, the space's in-flight count under a reservation,
the listing, a finished job past its retention, and what `forget` cleans up."""

from __future__ import annotations

import random

from shared.job import JobStatus
from shared.machine import cancel, fail
from shared.store import keys
from shared.store.jobs import NameClaim
from tests.store.shelf import KEEP, MINUTE, WINDOW, Shelf


def test_the_census_counts_pending_jobs_by_where_they_stand(shelf: Shelf) -> None:
    first = shelf.put()
    shelf.clock.advance(1_000)
    shelf.put()
    shelf.put(delayMs=MINUTE)
    retrying = shelf.running(backoffMs=MINUTE)
    job = shelf.job(retrying)
    shelf.apply(
        retrying,
        fail(
            job,
            now_ms=shelf.now(),
            error="x",
            unrecoverable=False,
            retry_after_ms=None,
            rand=0.0,
            retention=KEEP,
            aging_ms=MINUTE,
        ),
    )
    shelf.running()
    shelf.put("other")
    census = shelf.store.census(shelf.space, "n", shelf.now(), cap=100)
    counted = (census.pending, census.claimable, census.first_time, census.retrying, census.capped)
    assert counted == (4, 2, 1, 1, False)
    assert census.oldest_claimable_at_ms == shelf.job(first).created_at_ms


def test_the_census_stops_at_its_cap(shelf: Shelf) -> None:
    shelf.insert([shelf.record() for _ in range(3)])
    census = shelf.store.census(shelf.space, "n", shelf.now(), cap=2)
    assert (census.pending, census.capped) == (2, True)


def test_a_reservation_becomes_the_jobs_places_and_a_finish_gives_one_back(shelf: Shelf) -> None:
    spaces = shelf.rt.space_store

    def in_flight() -> int:
        return spaces.in_flight(shelf.store.db.get(keys.inflight(shelf.space)))

    reservation = spaces.reserve(shelf.space, 2, 2, shelf.now())
    assert reservation is not None
    ids = [i.id for i in shelf.insert([shelf.record(), shelf.record()], reservation=reservation)]
    assert in_flight() == 2
    assert all(shelf.item(i).get("holds") == {"space"} for i in ids), "each job holds its place"
    assert spaces.reserve(shelf.space, 1, 2, shelf.now()) is None, "the space is full"
    shelf.apply(ids[0], cancel(now_ms=shelf.now(), retention=KEEP))
    assert in_flight() == 1
    assert spaces.reserve(shelf.space, 1, 2, shelf.now()) is not None


def test_a_name_concurrency_slot_is_held_while_running_and_let_go_after(shelf: Shelf) -> None:
    limits = {"n": NameClaim(MINUTE, concurrency=4)}
    shelf.insert([shelf.record(), shelf.record()])
    claimed = shelf.claim(limits)
    counters = shelf.store.counters
    assert sum(counters.running(shelf.space, "n")) == 2
    shelf.complete(claimed[0])
    assert sum(counters.running(shelf.space, "n")) == 1


def test_a_page_lists_newest_first_by_status_name_and_cursor(shelf: Shelf) -> None:
    first, second = shelf.put(), shelf.put()
    third = shelf.running()
    other = shelf.put("other")

    def page(**kw: object) -> list[str]:
        args: dict = {"before": None, "limit": 10, "status": None, "name": None} | kw
        return [j.id for j in shelf.store.jobs_page(shelf.space, now_ms=shelf.now(), **args).jobs]

    assert page() == [other, third, second, first]
    assert page(status=JobStatus.RUNNING) == [third]
    assert page(name="n", limit=2) == [third, second]
    assert page(before=second) == [first]


def test_a_finished_job_past_its_retention_reads_as_absent(shelf: Shelf) -> None:
    job_id = shelf.running()
    done = shelf.complete(job_id)
    assert done.purge_at_ms == shelf.now() + KEEP.completed_ms
    shelf.clock.advance(KEEP.completed_ms - 1_000)
    assert shelf.store.job(shelf.space, job_id, now_ms=shelf.now()) is not None
    assert job_id in [
        j.id
        for j in shelf.store.jobs_page(
            shelf.space, before=None, limit=5, status=None, name=None, now_ms=shelf.now()
        ).jobs
    ]
    shelf.clock.advance(1_000)
    assert shelf.store.job(shelf.space, job_id, now_ms=shelf.now()) is None
    assert (
        shelf.store.jobs_page(
            shelf.space, before=None, limit=5, status=None, name=None, now_ms=shelf.now()
        ).jobs
        == []
    )
    assert shelf.store.get_item(shelf.space, job_id) is not None, "hidden before TTL removes it"


def test_forget_removes_a_jobs_side_items_and_keeps_its_key_for_the_window(shelf: Shelf) -> None:
    """Retention removed the job's item (TTL, done by hand here); `forget` (the stream's
    cleanup) deletes what was beside it and copies its finish onto its key."""
    big = random.Random(1).randbytes(2_000).hex()  # does not compress into the item
    record = shelf.record(key="once", payload=big)
    side = record.payload.side_item
    assert side is not None, "the payload lives beside the job"
    job_id = shelf.insert([record])[0].id
    assert shelf.job(job_id).payload == big
    assert shelf.claim() == [job_id]
    finished = shelf.complete(job_id).finished_at_ms
    item = shelf.item(job_id)
    shelf.store.db.delete(keys.job(shelf.space, job_id))
    shelf.clock.advance(WINDOW)
    unknown = shelf.store.holder(shelf.space, "once")
    assert unknown is not None and unknown.status is None
    assert not unknown.released(WINDOW, shelf.now()), "held until the finish is known"
    shelf.store.forget(shelf.space, job_id, item)
    assert shelf.store.db.get({"pk": side["pk"], "sk": side["sk"]}) is None
    holder = shelf.store.holder(shelf.space, "once")
    assert holder is not None and holder.finished_at_ms == finished
    assert holder.released(WINDOW, shelf.now())
