"""`shared.spread`'s decisions, on a store of its own: the width a load needs, the sampled
count, and the order in which width and reach move."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shared import spread
from shared.spread import SAMPLE, Spreader, width_for
from shared.store.spread import Spread
from shared.store.timers import NARROW, Timer


class Store:
    """Just what `Spreader` asks of `SpreadStore`, in memory."""

    def __init__(self) -> None:
        self.spread = Spread()
        self.counts: dict[int, int] = {}
        self.occupied_shards: set[int] = set()
        """The ready shards (by number) that hold an entry."""
        self.writes = 0

    def count(self, space: str, name: str, window: int, amount: int) -> int:
        self.writes += 1
        self.counts[window] = self.counts.get(window, 0) + amount
        return self.counts[window]

    def load(self, space: str, name: str, window: int) -> int:
        return max(self.counts.get(window, 0), self.counts.get(window - 1, 0))

    def set_spread(self, space: str, name: str, was: Spread, *, width: int, reach: int, now_ms: int) -> bool:
        if was != self.spread:
            return False
        self.spread = Spread(width, reach, now_ms)
        return True

    def occupied(self, space: str, name: str, shards: Iterable[int]) -> bool:
        return any(n in self.occupied_shards for n in shards)


class Timers:
    """Where the spreader files a widened name for the clock: kept, to be looked at."""

    def __init__(self) -> None:
        self.filed: list[tuple[str, list[Timer]]] = []

    def file(self, space: str, timers: list[Timer]) -> None:
        self.filed.append((space, timers))


def spreader(store: Store, rand: Any = lambda: 0.5) -> Spreader:
    return Spreader(store, Timers(), rand)  # type: ignore[arg-type]


def test_width_is_a_power_of_two_from_4_to_64_at_250_jobs_a_second_a_shard() -> None:
    assert [width_for(r) for r in (0, 1_000, 1_001, 2_001, 4_001, 8_001, 10_000, 10**6)] == [
        4,
        4,
        8,
        16,
        32,
        64,
        64,
        64,
    ]


def test_creates_are_counted_about_one_write_for_every_sample_of_jobs() -> None:
    store, now = Store(), 1_000_000
    rng = iter([i / 1000 for i in range(1000)] * 100)
    s = spreader(store, lambda: next(rng))
    for _ in range(1000):
        s.created("s", "n", 1, store.spread, now)
    assert store.writes == 1000 // SAMPLE + 1  # rand < 1/SAMPLE: about one create in SAMPLE
    assert abs(sum(store.counts.values()) - 1000) <= SAMPLE


def test_reach_rises_first_and_width_follows_after_the_caches_read_it() -> None:
    store, now = Store(), 10_000_000
    s = spreader(store, lambda: 0.0)
    for _ in range(40):  # 40 x SAMPLE jobs in a second
        s.created("s", "n", SAMPLE, store.spread, now)
        now += 25
    assert store.spread.width == 4 and store.spread.reach > 4
    since = store.spread.since_ms
    s.created("s", "n", SAMPLE, store.spread, since + spread.WIDEN_AFTER_MS - 1)
    assert store.spread.width == 4
    s.created("s", "n", SAMPLE, store.spread, since + spread.WIDEN_AFTER_MS)
    assert 4 < store.spread.width <= store.spread.reach
    # Each widening filed the name for the clock to narrow first, a window of counts later.
    filed = [t for _, timers in s.timers.filed for t in timers]  # type: ignore[attr-defined]
    assert filed and {(t.kind, t.subject) for t in filed} == {(NARROW, "n")}


def test_the_clock_narrows_width_when_load_goes_and_reach_once_the_shards_past_are_empty() -> None:
    store = Store()
    store.spread = Spread(32, 32, 0)
    s = spreader(store)
    now = 10_000_000
    store.counts[now // spread.WINDOW_MS] = 50_000  # 5,000 jobs/s: keep 32... then it goes
    s.narrow("s", "n", store.spread, now)
    assert store.spread.width == 32
    now += 3 * spread.WINDOW_MS
    s.narrow("s", "n", store.spread, now)
    assert (store.spread.width, store.spread.reach) == (4, 32)
    store.occupied_shards = {9}
    s.narrow("s", "n", store.spread, now + spread.NARROW_GRACE_MS)
    assert store.spread.reach == 32, "a job past the width keeps the reach"
    store.occupied_shards = set()
    s.narrow("s", "n", store.spread, now + spread.NARROW_GRACE_MS - 1)
    assert store.spread.reach == 32, "no create may still write past the width"
    s.narrow("s", "n", store.spread, now + spread.NARROW_GRACE_MS)
    assert store.spread == Spread(4, 4, now + spread.NARROW_GRACE_MS)
