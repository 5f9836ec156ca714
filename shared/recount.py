"""Recounts that heal the stream's gauges: each name's pending and running jobs counted again
from the jobs themselves, and set where the stream's count has drifted.

The stream counts every record once (`shared.store.tallies`), but a batch whose retries run
out goes to the dead-letter queue uncounted, and its jobs' moves are then missing from the
gauges for good. So once a day for each space the stream counted records of (and at once
when counting a batch failed), the clock recounts it, in two steps:

1. **Survey.** Read each name's gauges and their version (strongly consistent), and only
   then read every job partition of the space, counting unfinished jobs by name. Large
   spaces take several ticks: a tick reads up to `PARTITIONS_A_TICK` partitions whole.
2. **Settle**, `settle_ms` after the survey ended (longer than the stream's maximum record
   age): for each name whose count differs, set its gauges to what its jobs held, on
   condition that its version has not moved since step 1.

Why that is exact: a job's move the survey saw but the gauges did not yet hold was on its
way through the stream, and by the time of step 2 it has either been counted (the version
moved: nothing is set, the next survey looks again) or been dropped for good (the version
did not move, and setting the count puts it back). A move the survey did not see is either
counted on top of what is set, or lost in turn and found by the next survey. A name busy
all day long never stands still for `settle_ms`: its count heals on a quieter day.

Cost: the survey reads the space's job items (a read unit for every 4 KB), once a
day for a space with traffic; settling writes only the names that drifted.
"""

from __future__ import annotations

from shared.clock import Clock
from shared.store.port import RECOUNT, RecountStorePort, SpaceStorePort, Timer
from shared.timers import Timers

SURVEY = "survey"
SETTLE = "settle"
PARTITIONS_A_TICK = 16
"""Job partitions one tick's survey reads (each whole): a space of a million jobs kept
(some 15,000 a partition) is some 4 GB of reads a tick at most, and is surveyed in four."""


class Recount:
    def __init__(
        self,
        *,
        clock: Clock,
        store: RecountStorePort,
        spaces: SpaceStorePort,
        timers: Timers,
        every_ms: int,
        settle_ms: int,
    ) -> None:
        self.clock = clock
        self.store = store
        self.spaces = spaces
        self.timers = timers
        self.every_ms = every_ms
        """How often a space with traffic is recounted (`shared.config`: a day)."""
        self.settle_ms = settle_ms
        """How long after its survey a recount settles: past the stream's maximum record age."""

    def counted(self, space: str) -> None:
        """The stream counted records of the space: file its recount for the end of the
        period (once a period and process)."""
        now, every = self.clock.now_ms(), self.every_ms
        due = (now // every + 1) * every
        self.timers.once(space, RECOUNT, SURVEY, due, per_ms=every)

    def lost(self, spaces: set[str]) -> None:
        """Counting a batch of these spaces' records failed: recount them once its retries
        have run their course."""
        due = self.clock.now_ms() + self.settle_ms
        for space in spaces:  # once a settling period and process: the retries fail alike
            self.timers.once(space, RECOUNT, SURVEY, due, per_ms=max(self.settle_ms, 1))

    def handle(self, space: str, step: str, now_ms: int) -> list[Timer]:
        """A due recount timer: the timers to file next."""
        return self.settle(space) if step == SETTLE else self.survey(space, now_ms)

    def survey(self, space: str, now_ms: int) -> list[Timer]:
        """Begin or go on with the space's survey; once every partition is read, file its settling."""
        survey = self.store.survey(space)
        if survey is None:
            survey = self.store.begin(space, self.spaces.names(space), now_ms)
        left = survey.left
        now = left[:PARTITIONS_A_TICK]
        self.store.record(space, self.store.unfinished(space, now))
        if len(now) < len(left):
            return [Timer(RECOUNT, SURVEY, now_ms)]  # the next tick goes on
        return [Timer(RECOUNT, SETTLE, self.clock.now_ms() + self.settle_ms)]

    def settle(self, space: str) -> list[Timer]:
        """Set each drifted name's gauges (where the stream stood still), then end the survey."""
        proposals = self.store.proposals(space)
        for proposal in proposals:
            if proposal.differs:
                self.store.settle(space, proposal)
        self.store.end(space, [p.name for p in proposals])
        return []
