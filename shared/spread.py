"""A name's ready shards: 4 at rest, more under load, back to 4 when the load has gone.

Why: each ready shard is one partition key of the index, and one key takes 1,000 write
units a second: 500 jobs/s at 2 index writes a job. An idle name should cost a claim 4
queries, as it always has; a busy one needs up to 64 shards for 10,000 jobs/s.

How (no hot key anywhere): creates count themselves, sampled, on a per-name item (one
write for about every `SAMPLE` jobs, so 10,000 jobs/s write it some 80 times a second),
in 10-second windows. A sampled create that finds the window's rate past what the width
holds raises the name's `reach` (claims read that many shards) at once, and a sampled
create at least `WIDEN_AFTER_MS` later raises `width` (new jobs are written to that
many) to it: by then every claim's cached policies (a second at most) read the new shards.
The clock narrows: it lowers `width` once the load has gone, and `reach` once no create
can still write past the width (`NARROW_GRACE_MS`) and the shards past it are empty. A
job claimed from past its rest shard is moved there by its claim (`JobStore.claim`), so
a retry, a release or an expired lease brings it back where every reach looks, and an
emptied shard stays empty. Keys' entries (`shared.store.keyed`) are listed and moved
within the width the name has at the time, so they leave the shards past a narrowed width
as claims read them, and the check that those shards are empty sees them as it sees jobs.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from shared import limits
from shared.store.port import NARROW, Spread, SpreadStorePort, Timer
from shared.timers import Timers

WINDOW_MS = 10_000
"""Creates are counted in windows of this length."""
SAMPLE = 128
"""A create of n jobs is counted with chance min(1, n / SAMPLE), as max(n, SAMPLE) jobs:
an unbiased count at about one write for every SAMPLE jobs."""
SHARD_JOBS_S = 250
"""Jobs a second one shard is given: half of the 500 it takes (headroom for bursts)."""
WIDEN_AFTER_MS = 2_000
"""Width follows reach this long after: longer than the claims' policy cache (1 s)."""
NARROW_GRACE_MS = 60_000
"""Reach follows width down only this long after: longer than any create can take
between reading the width (cached for 1 s) and writing its jobs (29 s on AWS)."""
NARROW_BELOW = 0.5
"""The clock narrows once the load needs less than this share of the width."""
NARROW_EVERY_MS = WINDOW_MS
"""How often the clock looks again at a name wider than at rest (a window of counts)."""


def width_for(jobs_per_s: float) -> int:
    """The shards `jobs_per_s` needs: a power of two, 4 to `limits.MAX_READY_SHARDS`."""
    width = limits.READY_SHARDS
    while width < limits.MAX_READY_SHARDS and width * SHARD_JOBS_S < jobs_per_s:
        width *= 2
    return width


def window_of(now_ms: int) -> int:
    return now_ms // WINDOW_MS


class Spreader:
    def __init__(
        self, store: SpreadStorePort, timers: Timers, rand: Callable[[], float] = random.random
    ) -> None:
        self.store = store
        self.timers = timers
        """Where a widened name is filed for the clock to narrow (`shared.timers`)."""
        self.rand = rand

    def created(self, space: str, name: str, jobs: int, spread: Spread, now_ms: int) -> None:
        """Count `jobs` new jobs of `name` (sampled), and widen the name when they ask for it."""
        if jobs <= 0 or self.rand() * SAMPLE >= jobs:
            return
        window = window_of(now_ms)
        counted = self.store.count(space, name, window, max(jobs, SAMPLE))
        # The rate so far in this window (at least a second of it, against sampling's noise).
        needed = width_for(counted * 1000 / max(now_ms - window * WINDOW_MS, 1_000))
        if needed > spread.reach or (needed > spread.width and now_ms >= spread.since_ms + WIDEN_AFTER_MS):
            # Before the name widens: the clock then narrows it once the load has gone.
            self.timers.file(space, [Timer(NARROW, name, now_ms + NARROW_EVERY_MS)])
        if needed > spread.reach:
            self.store.set_spread(space, name, spread, width=spread.width, reach=needed, now_ms=now_ms)
        elif needed > spread.width and now_ms >= spread.since_ms + WIDEN_AFTER_MS:
            self.store.set_spread(space, name, spread, width=needed, reach=spread.reach, now_ms=now_ms)

    def narrow(self, space: str, name: str, spread: Spread, now_ms: int) -> bool:
        """The clock's part: lower the width once the load has gone, then the reach once
        the shards past the width are empty and no create can write there any more.
        Whether the name is still wider than at rest (the clock looks again later)."""
        if spread.at_rest:
            return False
        recent = self.store.load(space, name, window_of(now_ms))
        needed = width_for(recent * 1000 / WINDOW_MS / NARROW_BELOW)
        if needed < spread.width:
            self.store.set_spread(space, name, spread, width=needed, reach=spread.reach, now_ms=now_ms)
            return True
        if (
            spread.reach > spread.width
            and now_ms >= spread.since_ms + NARROW_GRACE_MS
            and not self.store.occupied(space, name, range(spread.width, spread.reach))
        ):
            # At rest if this write applied; if another tick's did first, at rest all the same.
            return not self.store.set_spread(
                space, name, spread, width=spread.width, reach=spread.width, now_ms=now_ms
            )
        return True
