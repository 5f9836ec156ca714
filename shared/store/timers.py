"""The timer book: the clock's timed work other than leases and deadlines, filed by when
it falls due (`shared.store.books`), so a tick reads only what is due.

Each entry names what to do (`kind`, read by `shared.timers`), for what (`subject`: a
name, a job id, or nothing for the space), and when; `until_ms` is the kind's own (the
never-claimed check: look again until then). A bucket lists the entries one filing made,
for one space; the clock handles each, files again what is not due yet, and removes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from shared.store import keys
from shared.store.books import Book, Bucket, Slots
from shared.store.dynamo import Dynamo

UNCLAIMED: Final = "U"
"""Look for a name's never-claimed jobs (`shared.unclaimed`)."""
NARROW: Final = "N"
"""Narrow a name spread wider than at rest, once its load has gone (`shared.spread`)."""
HEAL: Final = "H"
"""Give back the room of creates that died before settling it (`SpaceStore.heal`)."""
CALLBACK: Final = "C"
"""Check a job's callback delivery: record it if the stream never did, hand it over if due."""
HINT: Final = "W"
"""Hint a name's listening workers that a delay or a backoff has ended (`shared.wake`)."""
SCHEDULE: Final = "S"
"""Make a schedule's job for its fire time, and file it again at the next (`shared.jobs.schedules`)."""
RECOUNT: Final = "R"
"""Recount a space's gauges from its jobs, a survey then its settling (`shared.recount`)."""


@dataclass(frozen=True)
class Timer:
    kind: str
    subject: str
    due_ms: int
    until_ms: int = 0


def encode(entries: list[Timer]) -> str:
    """JSON rows `[kind, subject, due, until]`: subjects are names, which may hold any separator."""
    return json.dumps([[t.kind, t.subject, t.due_ms, t.until_ms] for t in entries], separators=(",", ":"))


def decode(text: str) -> list[Timer]:
    return [
        Timer(str(kind), str(subject), int(due), int(until)) for kind, subject, due, until in json.loads(text)
    ]


TimerBucket = Bucket[Timer]


class TimerBook(Book[Timer]):
    """`record(space, [(kind, subject, due), ...])`: timers to handle when they fall due."""

    def __init__(self, db: Dynamo, slots: Slots | None = None) -> None:
        """`slots`: the slots this process's books share (one read of their maps a tick);
        None: slots of its own, at AWS's tick and shards."""
        super().__init__(
            slots or Slots(db),
            prefix=keys.TIMER_PREFIX,
            entry=Timer,
            encode=encode,
            decode=decode,
            due_of=lambda e: e.due_ms,
        )
