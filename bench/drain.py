"""How fast the clock's lease check drains the lease book, and what a tick costs in calls.

Why: every claim request files one bucket in the lease book (`shared.store.leases`), and
the clock must clear each once its lease has ended, or the book grows without end. At
10,000 jobs/s claimed one at a time that is 10,000 buckets a second, 600,000 a tick of
a minute. This fills the book with that shape of backlog (one job a bucket, the worst
case; a claim of 10 files one bucket for 10 jobs), lets the leases end, runs one tick's
lease check against the in-memory DynamoDB, and counts its calls by kind. The rate on
AWS follows from the calls: the partitions are drained `DRAIN_THREADS` at a time, each
call waiting about `CALL_MS` on DynamoDB (the time moto takes here says nothing of AWS).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from moto import mock_aws

from bench.capacity import CapacityMeter
from bench.partitions import TARGET_JOBS_PER_S
from bench.world import moto_runtime
from shared.clock import ManualClock
from shared.ids import IdGenerator
from shared.store import keys
from shared.store.leases import LeaseEntry, encode
from shared.sweeper import DRAIN_THREADS, TickReport

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
        """On AWS: every thread waiting `CALL_MS` a call."""
        return DRAIN_THREADS * (1_000 / CALL_MS) * self.entries_per_call


def measure(*, buckets: int, per_bucket: int = 1, partitions: int = 4) -> Drain:
    """File `buckets` buckets of `per_bucket` claims each in a lease book of `partitions`
    partitions, and drain them with one tick's lease check. At 10,000 claims a second every
    one of the 256 partitions on AWS holds thousands of buckets a tick: a book of a few
    full ones shows that shape at a bench's size (a book of 256 mostly empty ones would
    count the queries that find nothing, which a loaded book does not make). The jobs
    they name are gone (reported long ago): the common case, where the check reads each
    job once and moves on."""
    with mock_aws():
        clock = ManualClock()
        # One call at a time: moto's table is not safe for the drain's threads (DynamoDB is).
        rt, client = moto_runtime(clock, serialized=True, book_shards=partitions)
        rng, ids = random.Random(3), IdGenerator()
        now = clock.now_ms()
        items = []
        for _ in range(buckets):
            entries = [LeaseEntry(ids.new(now), 1, now + 60_000) for _ in range(per_bucket)]
            key = keys.book_bucket(keys.LEASE_PREFIX, rng.randrange(partitions), now + 60_000, ids.new(now))
            items.append(key | {"space": "bench", "jobs": encode(entries)})
        rt.db.batch_put(items)
        clock.advance(60_000)
        meter = CapacityMeter(client)
        meter.attach()
        report = TickReport()
        rt.sweeper.expire_leases(report)
        meter.detach()
        left = sum(len(rt.db.query("pk = :pk", vals={":pk": p})[0]) for p in rt.leases.partitions())
        if left:
            raise RuntimeError(f"one tick left {left} of {buckets} buckets")
        calls = {op: int(figures["calls"]) for op, figures in sorted(meter.usage.by_operation.items())}
        return Drain(buckets * per_bucket, buckets, partitions, calls)


def describe(drain: Drain, what: str) -> str:
    calls = ", ".join(f"{n} {op}" for op, n in drain.calls.items())
    rate = drain.entries_per_second
    verdict = "keeps up with" if rate >= TARGET_JOBS_PER_S else "falls behind"
    return (
        f"lease check drain, {what}: {drain.entries:,} leases in {drain.buckets:,} buckets"
        f" ({drain.partitions} partitions, all full as the {keys.BOOK_SHARDS} are at load)"
        " cleared by one tick"
        f" in {sum(drain.calls.values()):,} calls ({calls}): {drain.entries_per_call:.1f} leases a call;"
        f" {DRAIN_THREADS} partitions side by side at {CALL_MS} ms a call on AWS: {rate:,.0f} leases/s,"
        f" {verdict} {TARGET_JOBS_PER_S:,} jobs/s"
    )
