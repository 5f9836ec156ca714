"""Which counts a transition takes and lets go of, and how a limit is split over items."""

from __future__ import annotations

import pytest

from shared import machine
from shared.job import Retention
from shared.machine import Hold, Take
from shared.store.codec import released, transition_update
from shared.store.counters import rate_shares, slot_shares

KEEP = Retention(completed_ms=1_000, failed_ms=1_000)
HOLDS = frozenset({"space", "name.3"})


def test_a_hold_is_named_on_the_job_by_its_tag() -> None:
    assert Hold("space").tag == "space" and Hold("name", 3).tag == "name.3"
    assert Hold.of("name.3") == Hold("name", 3) and Hold.of("space") == Hold("space")


@pytest.mark.parametrize(
    ("transition", "lets_go"),
    [
        (machine.claim(attempt_before=0, now_ms=0, lease_ms=1), set()),
        (machine.touch(attempt=1, now_ms=0, lease_ms=1), set()),
        (machine.keep(attempt=1), set()),
        (machine.release(attempt=1, now_ms=0, priority=0, aging_ms=1), {"name.3"}),
        (machine.complete(attempt=1, now_ms=0, retention=KEEP), {"space", "name.3"}),
        (machine.cancel(now_ms=0, retention=KEEP), {"space", "name.3"}),
        (machine.unclaimed(now_ms=0, window_ms=1, retention=KEEP), {"space", "name.3"}),
    ],
)
def test_a_slot_is_held_while_running_and_the_space_place_until_final(
    transition: machine.Transition, lets_go: set[str]
) -> None:
    assert released(transition, HOLDS) == lets_go


def test_a_write_that_lets_go_requires_exactly_the_holds_read() -> None:
    complete = machine.complete(attempt=1, now_ms=0, retention=KEEP)
    update = transition_update("space", "j", complete, holds=HOLDS)
    assert "size(#holds)" in update.condition() and "REMOVE" in update.expression()
    nothing = transition_update("space", "j", complete)
    assert "attribute_not_exists(#holds)" in nothing.condition()
    release = machine.release(attempt=1, now_ms=0, priority=0, aging_ms=1)
    assert "DELETE #holds" in transition_update("space", "j", release, holds=HOLDS).expression()
    touch = machine.touch(attempt=1, now_ms=0, lease_ms=1)
    assert "holds" not in transition_update("space", "j", touch).condition(), "a touch never looks at holds"
    claim = machine.claim(attempt_before=0, now_ms=0, lease_ms=1, takes=(Take(Hold("name", 2), 8),))
    assert "ADD #holds" in transition_update("space", "j", claim).expression()


@pytest.mark.parametrize(
    ("concurrency", "shards"), [(1, 1), (8, 1), (15, 1), (16, 2), (20, 2), (128, 16), (100_000, 16)]
)
def test_a_concurrency_is_split_into_shares_of_at_least_8(concurrency: int, shards: int) -> None:
    shares = slot_shares(concurrency)
    assert len(shares) == shards and sum(shares) == concurrency
    assert max(shares) - min(shares) <= 1


def test_a_rate_is_split_one_item_per_200_a_second_never_below_a_token() -> None:
    assert [s.tokens for s in rate_shares(10, 60_000)] == [10]
    assert [s.tokens for s in rate_shares(2_000, 1_000)] == [200] * 10
    assert (
        len(rate_shares(100_000, 1_000)) == 16
        and sum(s.tokens for s in rate_shares(100_000, 1_000)) == 100_000
    )
    assert [s.tokens for s in rate_shares(3, 1_000)] == [3]
