"""`JobStore.claim`'s order: priority, then ready time under the name's aging interval,
first in first out within; delayed jobs wait for their time; only the names asked for."""

from __future__ import annotations

from shared.job import STRICT_AGING_MS, JobStatus
from shared.store.port import NameClaim
from tests.store.shelf import MINUTE, Shelf


def test_a_higher_priority_goes_first(shelf: Shelf) -> None:
    low = shelf.put(priority=-5)
    plain = shelf.put()
    high = shelf.put(priority=5)
    assert shelf.claim() == [high, plain, low]


def test_jobs_of_one_priority_and_time_go_first_in_first_out(shelf: Shelf) -> None:
    inserted = shelf.insert([shelf.record() for _ in range(6)])
    ids = [i.id for i in inserted]
    assert [shelf.claim(count=1)[0] for _ in range(3)] + shelf.claim(count=3) == ids


def test_a_job_that_waited_long_enough_goes_before_a_newer_higher_one(shelf: Shelf) -> None:
    """Aging: each minute waited is worth a step of priority."""
    old = shelf.put()
    shelf.clock.advance(3 * MINUTE)
    newer_by_two = shelf.put(priority=2)
    newer_by_five = shelf.put(priority=5)
    assert shelf.claim() == [newer_by_five, old, newer_by_two]


def test_under_strict_priority_waiting_is_worth_nothing(shelf: Shelf) -> None:
    old = shelf.insert([shelf.record(aging_ms=STRICT_AGING_MS)])[0].id
    shelf.clock.advance(3 * MINUTE)
    newer = shelf.insert([shelf.record(aging_ms=STRICT_AGING_MS, priority=1)])[0].id
    assert shelf.claim({"n": NameClaim(STRICT_AGING_MS)}) == [newer, old]


def test_a_delayed_job_is_not_claimable_before_its_time(shelf: Shelf) -> None:
    job_id = shelf.put(delayMs=10_000)
    shelf.clock.advance(9_999)
    assert shelf.claim() == []
    assert shelf.job(job_id).status == JobStatus.PENDING
    shelf.clock.advance(1)
    assert shelf.claim() == [job_id]


def test_a_delayed_job_whose_time_came_goes_by_its_ready_time(shelf: Shelf) -> None:
    """A job from the later lane is merged in by the time it became claimable: before a
    job made after that time, after one made before it."""
    before = shelf.put()
    delayed = shelf.put(delayMs=10_000)
    shelf.clock.advance(20_000)
    after = shelf.put()
    assert shelf.claim() == [before, delayed, after]


def test_only_the_names_asked_for_are_claimed(shelf: Shelf) -> None:
    """A paused name is left out of a claim's names by the use case (`shared.jobs.claim`):
    the store hands out none of a name it was not given."""
    paused = shelf.put("paused")
    running = shelf.put("running")
    assert shelf.claim({"running": NameClaim(MINUTE)}) == [running]
    assert shelf.job(paused).status == JobStatus.PENDING
    assert shelf.claim({"paused": NameClaim(MINUTE)}) == [paused]


def test_a_claim_hands_out_no_more_than_its_count(shelf: Shelf) -> None:
    ids = [i.id for i in shelf.insert([shelf.record() for _ in range(4)])]
    assert shelf.claim(count=3) == ids[:3]
    assert shelf.claim(count=3) == ids[3:]
