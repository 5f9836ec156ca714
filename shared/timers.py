"""Timed work filed when it is decided, at the time it falls due, for the clock (the timer
book, `shared.store.timers`): a tick reads what is due by then and nothing else, whatever
the number of spaces and names.

What is filed, by whom, and what the clock does then (`shared.sweeper`), by kind:

- `UNCLAIMED` (a name): filed by the stream for a job that became pending (at its ready
  time plus the space's window), or a job of a limited name that let its slot go (now);
  by a change of the window (now, and again until the old jobs are covered). The clock
  looks for the name's never-claimed jobs (`shared.unclaimed`).
- `NARROW` (a name): filed by a create that spreads the name wider, before it does. The
  clock narrows the name once its load has gone, and looks again until it is at rest.
- `HEAL` (the space): filed by a create that takes room on `maxInFlight`, before it does.
  The clock gives back reservations of creates that died.
- `CALLBACK` (a job id): filed by a finishing write of a job with a callback, before it,
  and by a sender that will try again. The clock records a delivery the stream never did,
  and hands a due one to the sender (filing a check should the sender die).
- `HINT` (a name): filed by the stream for a delay or backoff ending past what
  `shared.wake` puts off itself. The clock hints the name's listening workers.
- `SCHEDULE` (a schedule id): filed by an edit of a schedule at its next fire time, and by
  a fire at the one after, before the write that sets it. The clock makes the jobs due
  (`shared.jobs.schedules`).
- `RECOUNT` (`survey` or `settle`): filed by the stream once a period for a space it
  counted records of, and at once when counting a batch failed; by a survey for its next
  step. The clock recounts the space's gauges from its jobs (`shared.recount`).

A process files one timer of a kind, space and subject per period (`once`): a name with
jobs arriving all day costs one filing a period, not one a job. Every handler finds its
facts on the items that decide (the job, the delivery, the name's policies), so a timer
handled twice, or late, does nothing twice.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from shared.clock import Clock
from shared.store.port import CALLBACK, HEAL, HINT, NARROW, RECOUNT, SCHEDULE, UNCLAIMED, BookPort, Timer

KINDS = frozenset({UNCLAIMED, NARROW, HEAL, CALLBACK, HINT, SCHEDULE, RECOUNT})

MEMO = 65_536
"""Filings a process remembers (`once`); forgetting one only files it again."""


class Timers:
    """Files timers in the timer book: each filing one bucket item, before what it covers."""

    def __init__(self, book: BookPort[Timer], clock: Clock) -> None:
        self.book = book
        self.clock = clock
        self._lock = threading.Lock()
        self._filed: OrderedDict[tuple[str, str, str, int], None] = OrderedDict()

    def file(self, space: str, timers: list[Timer]) -> None:
        """File `timers` of `space` in one bucket (nothing when there are none)."""
        if timers:
            self.book.record(space, [(t.kind, t.subject, t.due_ms, t.until_ms) for t in timers])

    def once(
        self, space: str, kind: str, subject: str, due_ms: int, *, per_ms: int, until_ms: int = 0
    ) -> bool:
        """File the timer unless this process filed one of the same kind, space and subject
        due in the same period of `per_ms`; whether it filed. A write that fails is
        forgotten, so the next caller files it."""
        memo = (space, kind, subject, due_ms // per_ms)
        with self._lock:
            if memo in self._filed:
                return False
            self._filed[memo] = None
            if len(self._filed) > MEMO:
                self._filed.popitem(last=False)
        try:
            self.file(space, [Timer(kind, subject, due_ms, until_ms)])
        except BaseException:
            with self._lock:
                self._filed.pop(memo, None)
            raise
        return True


def period_end(ms: int, per_ms: int) -> int:
    """The end of the period of `per_ms` that `ms` falls in."""
    return (ms // per_ms + 1) * per_ms
