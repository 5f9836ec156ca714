"""How fast the clock's lease check drains the lease book, and what a tick costs in calls.

Why: every claim request files one bucket in the lease book (`shared.store.leases`), and
the clock must clear each once its lease has ended, or the book grows without end. At
10,000 jobs/s claimed one at a time that is 10,000 buckets a second, 600,000 a tick of
a minute, all in the write shards of one time slot (`shared.store.books`). This fills a
slot with that shape of backlog (one job a bucket, the worst case; a claim of 10 files one
bucket for 10 jobs), lets the leases end, runs one tick's lease check against the in-memory
DynamoDB, and counts its calls by kind. The rate on AWS follows from the calls: the slot's
shards are drained `DRAIN_THREADS` at a time, each call waiting about `CALL_MS` on DynamoDB
(the time moto takes here says nothing of AWS).

`idle` measures the other end: what both books cost a tick with nothing due, however much
is filed for later (their slot maps are read in one query, and nothing else).
"""

from __future__ import annotations

from dataclasses import dataclass

from moto import mock_aws

from bench.capacity import CapacityMeter
from bench.partitions import TARGET_JOBS_PER_S
from bench.world import moto_runtime
from shared.clock import ManualClock
from shared.ids import IdGenerator
from shared.runtime import Runtime
from shared.store import keys
from shared.store.leases import LeaseEntry, encode
from shared.sweeper import DRAIN_THREADS, TickReport

ids = IdGenerator()

CALL_MS = 15
"""ESTIMATE: a Query of 100 small items, a BatchGetItem of 100 keys or a BatchWriteItem of
25 deletes, from a Lambda in the table's region (single-digit ms for one item)."""


@dataclass(frozen=True)
class Drain:
    entries: int
    buckets: int
    partitions: int
    calls: dict[str, int]

    @property
    def entries_per_call(self) -> float:
        return self.entries / max(1, sum(self.calls.values()))

    @property
    def entries_per_second(self) -> float:
        """On AWS: a slot's shards side by side, each thread waiting `CALL_MS` a call."""
        return min(DRAIN_THREADS, keys.BOOK_SHARDS) * (1_000 / CALL_MS) * self.entries_per_call


def measure(*, buckets: int, per_bucket: int = 1, partitions: int = 4) -> Drain:
    """File `buckets` buckets of `per_bucket` claims each in one slot of a lease book of
    `partitions` shards a slot, and drain them with one tick's lease check. At 10,000 claims
    a second every one of a slot's 32 shards on AWS holds thousands of buckets a tick: a
    slot of a few full ones shows that shape at a bench's size (a slot of 32 mostly empty
    ones would count the queries that find nothing, which a loaded slot does not make). The
    jobs they name are gone (reported long ago): the common case, where the check reads
    each job once and moves on."""
    with mock_aws():
        clock = ManualClock()
        # One call at a time: moto's table is not safe for the drain's threads (DynamoDB is).
        rt, client = moto_runtime(clock, serialized=True, book_shards=partitions)
        now = clock.now_ms()
        claims = [
            [LeaseEntry(ids.new(now), 1, now + 60_000) for _ in range(per_bucket)] for _ in range(buckets)
        ]
        file_in_bulk(rt, claims)
        clock.advance(60_000)
        meter = CapacityMeter(client)
        meter.attach()
        report = TickReport()
        rt.sweeper.expire_leases(report)
        meter.detach()
        shards = rt.leases.look(clock.now_ms()).partitions
        left = sum(len(rt.db.query("pk = :pk", vals={":pk": p})[0]) for p in shards)
        if left:
            raise RuntimeError(f"one tick left {left} of {buckets} buckets")
        calls = {op: int(figures["calls"]) for op, figures in sorted(meter.usage.by_operation.items())}
        return Drain(buckets * per_bucket, buckets, partitions, calls)


def file_in_bulk(rt: Runtime, buckets: list[list[LeaseEntry]]) -> None:
    """File each list of claims in a bucket of the lease book as a claim request would (its
    slot, its shard, the slot's marks), the buckets written 25 a call."""
    book, slots = rt.leases, rt.leases.slots
    now, items = rt.clock.now_ms(), []
    for entries in buckets:
        at = slots.look_at(min(e.lease_until_ms for e in entries), now)
        start, n = slots.place(book.prefix, at, now)
        key = keys.book_slot_bucket(book.prefix, start + slots.slot_ms, n, at, ids.new(at))
        items.append(key | {"space": "bench", "jobs": encode(entries)})
    rt.db.batch_put(items)


def idle(*, filed: int) -> int:
    """The DynamoDB calls of both books' part of a tick with nothing due, at AWS's settings,
    with `filed` buckets filed for later (over the next hour, a slot or more ahead)."""
    with mock_aws():
        clock = ManualClock()
        rt, client = moto_runtime(clock, serialized=True)
        now, hour = clock.now_ms(), 3_600_000
        ahead = [now + 2 * rt.config.clock_tick_ms + i * hour // max(filed, 1) for i in range(filed)]
        file_in_bulk(rt, [[LeaseEntry(ids.new(now), 1, until)] for until in ahead])
        meter = CapacityMeter(client)
        meter.attach()
        rt.sweeper.cancel_past_deadline(TickReport())
        rt.sweeper.expire_leases(TickReport())
        meter.detach()
        return meter.usage.calls


def describe_idle(calls: dict[int, int]) -> str:
    """`idle books: <N> DynamoDB calls a tick`, N the most of `calls` (by buckets filed)."""
    shown = ", ".join(f"{n} with {filed:,} buckets filed for later" for filed, n in calls.items())
    return f"idle books: {max(calls.values())} DynamoDB calls a tick ({shown})"


def describe(drain: Drain, what: str) -> str:
    calls = ", ".join(f"{n} {op}" for op, n in drain.calls.items())
    rate = drain.entries_per_second
    verdict = "keeps up with" if rate >= TARGET_JOBS_PER_S else "falls behind"
    return (
        f"lease check drain, {what}: {drain.entries:,} leases in {drain.buckets:,} buckets"
        f" ({drain.partitions} shards of one slot, all full as the {keys.BOOK_SHARDS} of a slot are at load)"
        " cleared by one tick"
        f" in {sum(drain.calls.values()):,} calls ({calls}): {drain.entries_per_call:.1f} leases a call;"
        f" {min(DRAIN_THREADS, keys.BOOK_SHARDS)} shards side by side at {CALL_MS} ms a call on AWS:"
        f" {rate:,.0f} leases/s,"
        f" {verdict} {TARGET_JOBS_PER_S:,} jobs/s"
    )
