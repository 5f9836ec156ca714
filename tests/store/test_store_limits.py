"""Limits and keys at the store: a name's `concurrency`, a key's `perKeyConcurrency`, and an
idempotency key held until the key window after its job finished has passed."""

from __future__ import annotations

import pytest

from shared.job import JobStatus
from shared.machine import Hold, Take, claim
from shared.store.counters import Owner
from shared.store.jobs import CounterFull, KeyHolder, NameClaim, RetryOf
from shared.store.jobs.apply import with_takes
from tests.store.shelf import LEASE, MINUTE, WINDOW, Shelf

TWO = {"n": NameClaim(MINUTE, concurrency=2)}


def test_a_name_at_its_concurrency_hands_out_no_more(shelf: Shelf) -> None:
    ids = [i.id for i in shelf.insert([shelf.record() for _ in range(3)])]
    assert shelf.claim(TWO) == ids[:2]
    assert shelf.claim(TWO) == []
    shelf.complete(ids[0])
    assert shelf.claim(TWO) == ids[2:]


def test_a_name_without_limits_hands_out_all_it_has(shelf: Shelf) -> None:
    ids = [i.id for i in shelf.insert([shelf.record() for _ in range(3)])]
    assert shelf.claim({"n": NameClaim(MINUTE), "other": NameClaim(MINUTE, concurrency=1)}) == ids


def test_a_key_at_its_per_key_concurrency_waits_while_other_keys_go(shelf: Shelf) -> None:
    one = {"n": 1}
    first, second = (
        i.id for i in shelf.insert([shelf.record(concurrencyKey="k") for _ in range(2)], per_key=one)
    )
    other = shelf.insert([shelf.record(concurrencyKey="j")], per_key=one)[0].id
    claiming = {"n": NameClaim(MINUTE, per_key_concurrency=1)}
    assert sorted(shelf.claim(claiming)) == sorted([first, other])
    assert shelf.claim(claiming) == []
    shelf.complete(first)
    assert shelf.claim(claiming) == [second]


def test_an_idempotency_key_is_held_while_its_job_is_unfinished(shelf: Shelf) -> None:
    first = shelf.insert([shelf.record(key="once")])[0]
    again = shelf.insert([shelf.record(key="once")])[0]
    assert first.new and (again.id, again.new) == (first.id, False)
    assert shelf.store.holder(shelf.space, "once") == KeyHolder(first.id, JobStatus.PENDING, None)
    assert shelf.store.holder(shelf.space, "other") is None


def test_an_idempotency_key_is_released_once_the_key_window_has_passed(shelf: Shelf) -> None:
    first = shelf.insert([shelf.record(key="once")])[0].id
    assert shelf.claim() == [first]
    shelf.complete(first)
    holder = shelf.store.holder(shelf.space, "once")
    assert holder == KeyHolder(first, JobStatus.COMPLETED, shelf.now())
    shelf.clock.advance(WINDOW - 1)
    assert not holder.released(WINDOW, shelf.now())
    assert shelf.insert([shelf.record(key="once")])[0].id == first, "still held within the window"
    shelf.clock.advance(1)
    assert holder.released(WINDOW, shelf.now())
    second = shelf.insert([shelf.record(key="once")])[0]
    assert second.new and second.id != first
    assert shelf.store.holder(shelf.space, "once") == KeyHolder(second.id, JobStatus.PENDING, None)


def test_a_retry_mark_names_the_one_job_made_from_a_failed_one(shelf: Shelf) -> None:
    old, untouched = shelf.put(), shelf.put()
    made = shelf.insert([shelf.record(retry_of=RetryOf(old, None))])[0]
    twice = shelf.insert([shelf.record(retry_of=RetryOf(old, None))])[0]
    assert made.new and (twice.id, twice.new) == (made.id, False)
    assert shelf.store.retries(shelf.space, [old, untouched]) == {old: made.id}
    assert shelf.job(made.id).retry_of == old


def test_a_claim_taking_a_full_slot_is_refused_with_counter_full(shelf: Shelf) -> None:
    """A claim that read free slots and lost them to another is refused in its own write."""
    one = {"n": NameClaim(MINUTE, concurrency=1)}
    first, second = (i.id for i in shelf.insert([shelf.record(), shelf.record()]))
    assert shelf.claim(one) == [first]
    late = with_takes(claim(attempt_before=0, now_ms=shelf.now(), lease_ms=LEASE), Take(Hold("name", 0), 1))
    before = shelf.item(second)
    with pytest.raises(CounterFull):
        shelf.store.apply(shelf.space, second, late, owner=Owner("n"))
    assert shelf.item(second) == before
    assert shelf.store.counters.running(shelf.space, "n", 1) == [1]
