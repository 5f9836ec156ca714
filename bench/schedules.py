"""What schedules cost: `bench.cost` prints one fire's DynamoDB units and a PUT's
(`fire_cost`), and `bench.idle` one idle tick with 100,000 schedules filed, and the tick at
which one of them falls due (`idle_tick`).

The fire: one daily schedule, made by the edit (`shared.jobs.schedules.put`) at AWS's
settings; its first fire is made by the clock (the name's first job lists it, once); its next
time is filed at the start of its window, a day ahead, and filed again nearer there
(`shared.store.books`, far ahead); then the tick at that next time is metered: its read of
the books' slot maps and of the due bucket, the schedule's read, the job's create (its item
with its index entry; the space's settings and the name's policies read), the next time's
timer (the slot's mark, the bucket), the schedule's write on its version, its read again
(which finds no time due) and the bucket's removal.
Costed by `bench.capacity`, as `bench.cost` costs a job. The sampled count of creates
(`shared.spread`: a create of one job writes it once in 128) is left out.

The 100,000: each is made by that same edit, whose read answers that there is none yet and
whose writes (the listing entry, the timer's bucket, the schedule's item) are kept and then
put straight into moto's table (`KeptWrites`, `make_many`; the books' slot marks go to the
table as the edit makes them): the items are the edit's own, only written another way (one
call at a time, 100,000 edits of four calls would take the bench the best part of an hour).
Each fires daily at a minute of its own, spread over the day (about 70 a minute), all in
the future: the timers of the next 64 minutes are filed at their own times, the rest at
their windows' starts (`shared.store.books`), none begun. A tick then reads the books'
slot maps, finds no slot begun, and stops. The tick at which one falls due is metered too:
the first fires `GAP_MINUTES` after the schedules are made, alone (none of the others fires
in those minutes).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from bench.capacity import CapacityMeter, Usage
from bench.payloads import order_payload
from bench.world import moto_runtime
from devserver.wiring import REGION, TABLE
from shared import limits
from shared.auth import Tokens
from shared.clock import ManualClock
from shared.jobs import schedules
from shared.jobs.context import Context
from shared.runtime import Runtime
from shared.schema import NewToken, ScheduleBody
from shared.store.books import Slots
from shared.store.dynamo import Dynamo, Item, serialize
from shared.store.schedules import ScheduleStore
from shared.store.timers import TimerBook
from shared.timers import Timers

SPACE = "bench"
NAME = "nightly-report"
MINUTES_A_DAY = 24 * 60
GAP_MINUTES = 6
"""Minutes after the schedules are made in which none fires: the one that falls due first
(`idle_tick`) fires at the end of them, alone."""


@cache
def _template() -> ScheduleBody:
    job = {"name": NAME, "payload": order_payload(random.Random(7))}
    return ScheduleBody.model_validate({"cron": "@daily", "job": job})


def body(cron: str) -> ScheduleBody:
    """A schedule of `cron` (UTC) whose job has a typical 1 KB JSON payload (`bench.payloads`)."""
    return _template().model_copy(update={"cron": cron})


def _never_sampled() -> float:
    return 1.0


@dataclass(frozen=True)
class FireCost:
    put: Usage
    """A PUT of a new schedule, with its token read (a function just started)."""
    fire: Usage
    """The tick that makes a daily schedule's job (not its first: see the module docstring)."""


def fire_cost() -> FireCost:
    """What a PUT of a daily schedule costs, and the tick that fires it a day later."""
    with mock_aws():
        clock = ManualClock()
        rt, client = moto_runtime(clock, serialized=True)
        rt.context.spreader.rand = _never_sampled
        token = str(rt.tokens.mint(NewToken(scopes=["admin"]))["token"])
        meter = CapacityMeter(client)
        meter.attach()
        try:
            meter.reset()
            Tokens(rt.tokens.store, clock).authenticate(f"Bearer {token}")
            made = schedules.put(rt.context, SPACE, "nightly", body("0 3 * * *"))
            put = meter.usage
            meter.reset()
            assert made.next_at_ms is not None
            first = made.next_at_ms
            tick(rt, clock, first)  # the first fire: the name's first job lists it
            quiet(rt, clock)
            after = schedules.get(rt.context, SPACE, "nightly").next_at_ms
            assert after == first + limits.DAY_MS, after
            # The next time was filed at its window's start, a day ahead: filed again nearer there.
            tick(rt, clock, rt.leases.slots.look_at(after, first))
            quiet(rt, clock)
            clock.advance(after - clock.now_ms())
            meter.reset()
            report = rt.sweeper.tick(tick_ms=rt.config.clock_tick_ms)
            fire = meter.usage
        finally:
            meter.detach()
        if report.scheduled != 1:
            raise RuntimeError(f"the tick at the fire time made {report.scheduled} jobs, not one")
        return FireCost(put, fire)


def tick(rt: Runtime, clock: ManualClock, at_ms: int) -> None:
    """One tick of the clock at `at_ms`."""
    clock.advance(max(0, at_ms - clock.now_ms()))
    rt.sweeper.tick(tick_ms=rt.config.clock_tick_ms)


def quiet(rt: Runtime, clock: ManualClock, *, most: int = 5) -> None:
    """Ticks a slot apart until one handles no timer and the next reads only the slot maps (the
    maps of drained slots go a slot after theirs)."""
    step = rt.config.clock_tick_ms
    for _ in range(most):
        clock.advance(step)
        if rt.sweeper.tick(tick_ms=step).timers == 0:
            break
    clock.advance(step)
    rt.sweeper.tick(tick_ms=step)


def describe(what: str, usage: Usage) -> str:
    """`<what>: <W> write units, <R> read units, <C> calls`, then what each call was."""
    by_op = ", ".join(f"{int(figures['calls'])} {op}" for op, figures in sorted(usage.by_operation.items()))
    return (
        f"{what}: {usage.write_units:g} write units, {usage.read_units:g} read units, {usage.calls} calls"
        f" ({by_op})"
    )


class KeptWrites(Dynamo):
    """The table as a schedule's edit sees it when it makes a new one: no schedule stored
    yet (`get`), and puts that are kept (`items`) to be written later, all at once; every
    other call (the books' slot marks) goes to the table."""

    def __init__(self, db: Dynamo) -> None:
        super().__init__(db.client, db.table)
        self.items: list[Item] = []

    def get(self, key: Mapping[str, str], *, consistent: bool = True) -> Item | None:
        return None

    def put(
        self,
        item: Mapping[str, Any],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        vals: Mapping[str, Any] | None = None,
    ) -> None:
        self.items.append(dict(item))


def kept_context(rt: Runtime, db: KeptWrites) -> Context:
    """`rt`'s context, but its schedules and timer book write through `db`: its slots are a
    process's own, as a process's edits file (at the runtime's slot and shards and clock)."""
    own = rt.leases.slots  # the slots every book of the runtime shares
    slots = Slots(db, slot_ms=own.slot_ms, shards=own.shards, now=own.now)
    return dataclasses.replace(
        rt.context, schedules=ScheduleStore(db), timers=Timers(TimerBook(db, slots), rt.clock)
    )


def make_many(rt: Runtime, made: Iterator[tuple[str, str]], *, batch: int = 10_000) -> int:
    """Make schedules (id, cron) through the edit, their writes kept (`KeptWrites`) and put
    straight into moto's table `batch` edits' at a time, without stream records (as
    `bench.idle` writes its copies of spaces: through the client, 300,000 items take moto
    some ten minutes); how many were made."""
    db = KeptWrites(rt.db)
    ctx = kept_context(rt, db)
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].get_table(TABLE)
    stream, table.stream_shard = table.stream_shard, None
    count = 0
    try:
        for schedule_id, cron in made:
            schedules.put(ctx, SPACE, schedule_id, body(cron))
            count += 1
            if count % batch == 0:
                _put_all(table, db)
        _put_all(table, db)
    finally:
        table.stream_shard = stream
    return count


def _put_all(table: Any, db: KeptWrites) -> None:
    for item in db.items:
        table.put_item(serialize(item), overwrite=True)
    db.items.clear()


def spread_crons(count: int, now_ms: int) -> Iterator[tuple[str, str]]:
    """`count` daily schedules: the first at the end of `GAP_MINUTES` after `now_ms`, the rest
    each at a minute of the day in turn but those of the gap."""
    start = now_ms // limits.MINUTE_MS % MINUTES_A_DAY  # the minute of the day now
    first = (start + GAP_MINUTES) % MINUTES_A_DAY
    yield "s000000", daily(first)
    others = [m for m in range(MINUTES_A_DAY) if (m - start) % MINUTES_A_DAY > GAP_MINUTES]
    for n in range(1, count):
        yield f"s{n:06d}", daily(others[n % len(others)])


def daily(minute_of_day: int) -> str:
    hour, minute = divmod(minute_of_day, 60)
    return f"{minute} {hour} * * *"


@dataclass(frozen=True)
class IdleTick:
    schedules: int
    idle: int
    """Calls of a tick with none due."""
    due: int
    """Calls of the tick at which the first falls due (alone)."""


def idle_tick(count: int) -> IdleTick:
    """The DynamoDB calls of one tick with `count` schedules filed and none due, then of the
    tick at which the first of them falls due."""
    with mock_aws():
        clock = ManualClock()
        rt, client = moto_runtime(clock, serialized=True)
        rt.context.spreader.rand = _never_sampled
        made = make_many(rt, spread_crons(count, clock.now_ms()))
        listed, _ = rt.db.query("pk = :pk", vals={":pk": f"SCHEDULES#{SPACE}"}, limit=1)
        if made != count or not listed:
            raise RuntimeError(f"made {made} schedules of {count}")
        meter = CapacityMeter(client)
        meter.attach()
        try:
            meter.reset()
            if rt.sweeper.tick(tick_ms=rt.config.clock_tick_ms).timers:
                raise RuntimeError("a timer was due at the idle tick")
            idle = meter.usage.calls
            first = schedules.get(rt.context, SPACE, "s000000").next_at_ms
            assert first is not None
            clock.advance(first - clock.now_ms())
            meter.reset()
            report = rt.sweeper.tick(tick_ms=rt.config.clock_tick_ms)
            due = meter.usage.calls
        finally:
            meter.detach()
        if report.scheduled != 1:
            raise RuntimeError(f"the tick at the first fire time made {report.scheduled} jobs, not one")
        return IdleTick(count, idle, due)


def describe_idle(measured: IdleTick) -> list[str]:
    return [
        f"idle tick at {measured.schedules:,} schedules: {measured.idle} DynamoDB calls",
        f"tick when 1 of {measured.schedules:,} schedules falls due: {measured.due} DynamoDB calls",
    ]
