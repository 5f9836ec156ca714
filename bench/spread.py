"""`make bench`, spread part: one busy name's hottest key, and claims racing each other.

1. One space, one busy name, no limits, at 10,000 jobs/s on the test clock: first the
   name is brought to the width that load gives it (`shared.spread`: the sampled counting
   of 3 seconds of creates at that pace, which writes nothing but its counter and the name
   item), then jobs are created, claimed and completed at that pace, each request reading
   its token, and every unit charged to its partition key (`bench.partitions`). One line a
   workload: the busiest key, its share, and the ceiling it sets (`ceiling: <N> jobs/s`).
   Shares, so a few hundred jobs tell what a million would.
2. 16 workers (threads, one process as `emit dev` runs them) claiming 10 at a time from one
   name and completing what they get, until the name is empty: failed conditional writes
   per job handed out, and claims that answered none while work waited (answered empty
   while more jobs were unclaimed than the other 15 claims in flight could hold). Twice: a
   backlog created at rest (4 shards), and the name spread by its load. The index here is
   consistent at once; on AWS it lags (a claimed job shows for a moment), which adds races.
"""

from __future__ import annotations

import argparse
import os
import random
import threading
from typing import Any

from moto import mock_aws

from bench.capacity import CapacityMeter
from bench.partitions import (
    READ_LIMIT,
    TABLE,
    TARGET_JOBS_PER_S,
    WRITE_LIMIT,
    PartitionLoad,
    describe_load,
    hashed,
)
from bench.payloads import order_payload
from bench.world import moto_runtime
from shared import render
from shared.clock import ManualClock
from shared.jobs.claim import claim
from shared.jobs.create import create
from shared.jobs.report import report
from shared.runtime import Runtime
from shared.schema import NewJob, NewToken, reports_in
from shared.spread import SAMPLE, WINDOW_MS
from shared.store import keys
from shared.store.table import READY_INDEX
from shared.sweeper import TickReport

SPACE = "bench"
NAME = "charge-invoice"
RATE = TARGET_JOBS_PER_S
"""Jobs a second the busy name is paced at on the test clock."""
WORKLOADS = ((100, 10), (1, 1))
"""(jobs a create, jobs a claim and a report)."""


def _runtime(clock: ManualClock, *, threads: bool = False) -> Runtime:
    """On moto; with `threads`, its calls one at a time (`bench.cost.moto_runtime`)."""
    return moto_runtime(clock, serialized=threads)[0]


def warm_up(rt: Runtime, clock: ManualClock, seconds: float = 5.0) -> int:
    """Feed the name's spread what `seconds` of creates at RATE count (sampled as a
    create counts itself), with the clock moving at that pace: the width it reaches."""
    rt.space_store.register_names(SPACE, {NAME}, clock.now_ms())
    step_ms = SAMPLE * 1000 // RATE
    for _ in range(int(seconds * 1000 / step_ms)):
        rt.context.spreader.created(
            SPACE, NAME, SAMPLE, rt.policies.space(SPACE).spread(NAME), clock.now_ms()
        )
        clock.advance(step_ms)
    clock.advance(WINDOW_MS // 5)  # past the policy cache, and past the wait before width follows reach
    rt.context.spreader.created(SPACE, NAME, SAMPLE, rt.policies.space(SPACE).spread(NAME), clock.now_ms())
    clock.advance(2_000)
    return rt.policies.space(SPACE).spread(NAME).width


def busy_name(jobs: int, batch: int, hand_out: int) -> list[str]:
    """One workload of section 1: its lines."""
    with mock_aws():
        clock = ManualClock()
        rt = _runtime(clock)
        width = warm_up(rt, clock)
        rng = random.Random(7)
        token = rt.tokens.mint(NewToken(scopes=["admin"]))["token"]
        meter = CapacityMeter(rt.dynamodb)
        load = PartitionLoad(meter.table_spec, meter.item)
        meter.listener = load.record
        meter.attach()
        made = 0
        held: list[dict[str, Any]] = []
        while made < jobs:
            rt.tokens.authenticate(f"Bearer {token}")
            create(
                rt.context,
                SPACE,
                [NewJob(name=NAME, payload=order_payload(rng)) for _ in range(batch)],
                batch=batch > 1,
            )
            made += batch
            clock.advance(made * 1000 // RATE - (made - batch) * 1000 // RATE)
        while len(held) < jobs:
            rt.tokens.authenticate(f"Bearer {token}")
            got = claim(
                rt.context, SPACE, count=hand_out, names=[NAME], wait_ms=0, lease_ms=None, show=render.claimed
            )
            if not got:
                raise RuntimeError(f"claimed only {len(held)} of {jobs} jobs")
            held += got
        for start in range(0, jobs, hand_out):
            rt.tokens.authenticate(f"Bearer {token}")
            reports = [
                {"id": j["id"], "attempt": j["attempt"], "complete": {}}
                for j in held[start : start + hand_out]
            ]
            report(rt.context, SPACE, reports_in(reports))
        clock.advance(24 * 3_600_000)
        rt.sweeper.expire_leases(TickReport())
        usage = meter.usage
        meter.detach()
        workload = f"one busy name at {RATE:,} jobs/s, {batch} jobs a create, {hand_out} a claim and a report"
        lines = describe_load(workload, load, jobs, {SPACE}, hashed(SPACE))
        shards = [
            c for c in load.ceilings(jobs) if c.key.where == READY_INDEX and c.key.value.startswith(SPACE)
        ]
        top = shards[0]
        lines.append(
            f"  its ready shards ({width} wide): busiest {top.key}: {top.write_share:.1%} of writes,"
            f" {top.read_share:.1%} of reads; ceiling: {top.jobs_per_second:,.0f} jobs/s"
        )
        lines.append(job_partitions(load, jobs))
        # The name's sampled create count: one item every create of the name may write.
        counted = keys.name_load(SPACE, NAME)["pk"]
        lines += [
            f"  its sampled create count {c.key}: {c.write_share:.1%} of writes,"
            f" {c.read_share:.1%} of reads; ceiling: {c.jobs_per_second:,.0f} jobs/s"
            for c in load.ceilings(jobs)
            if c.key.value == counted
        ]
        index_reads = sum(units for key, units in load.reads.items() if key.where == READY_INDEX)
        lines.append(
            f"  claims read the ready index for {index_reads / jobs:.3f} read units a job; in all"
            f" {usage.write_units / jobs:.2f} write units, {usage.read_units / jobs:.2f} read units a job"
        )
        return lines


def job_partitions(load: PartitionLoad, jobs: int) -> str:
    """The space's job partitions (`keys.job`): the busiest one measured, with its ceiling,
    and what each takes at its even share of the hash (what thousands of jobs a second give
    each; a short run puts a few more jobs on one by chance)."""
    family = f"{keys.JOB_PREFIX}{SPACE}#"
    top = next(c for c in load.ceilings(jobs) if c.key.where == TABLE and c.key.value.startswith(family))
    writes = sum(w for k, w in load.writes.items() if k.where == TABLE and k.value.startswith(family))
    reads = sum(r for k, r in load.reads.items() if k.where == TABLE and k.value.startswith(family))
    even = max(writes / WRITE_LIMIT, reads / READ_LIMIT) / keys.JOB_SHARDS / jobs
    return (
        f"  its job partitions {family}n ({keys.JOB_SHARDS} keys, {writes / jobs:.1f} write units a job):"
        f" busiest {top.key}: {top.write_share:.1%} of writes, {top.read_share:.1%} of reads;"
        f" ceiling: {top.jobs_per_second:,.0f} jobs/s; at an even share each is at"
        f" {RATE * even:.0%} of its limit at {RATE:,} jobs/s ({1 / even:,.0f} jobs/s)"
    )


def contention(jobs: int, *, spread: bool, workers: int = 16, count: int = 10) -> str:
    """Section 2: its line."""
    with mock_aws():
        clock = ManualClock()
        rt = _runtime(clock, threads=True)
        width = warm_up(rt, clock) if spread else 4
        rng = random.Random(7)
        for first in range(0, jobs, 100):
            batch = [NewJob(name=NAME, payload=order_payload(rng)) for _ in range(min(100, jobs - first))]
            create(rt.context, SPACE, batch, batch=True)
        race = _Race(rt, jobs, workers, count)
        rt.dynamodb.meta.events.register("after-call.dynamodb.UpdateItem", race.count_failures)
        pool = [threading.Thread(target=race.work) for _ in range(workers)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        if race.handed != jobs:
            raise RuntimeError(f"handed out {race.handed} of {jobs} jobs")
        where = (
            f"the name spread by its load (width {width})" if spread else "a backlog made at rest (4 shards)"
        )
        return (
            f"{workers} workers claiming {count} at a time, {jobs:,} jobs, {where}: "
            f"{race.failed / jobs:.2f} failed conditional writes per job; "
            f"{race.empty_while_waiting} empty claims while work waited"
        )


class _Race:
    """Workers claiming `count` at a time from one name and completing what they get, until
    three claims in a row answer none: what they were handed, failed conditional writes,
    and claims that answered none while more jobs were unclaimed than the others could hold."""

    def __init__(self, rt: Runtime, jobs: int, workers: int, count: int) -> None:
        self.rt, self.jobs, self.workers, self.count = rt, jobs, workers, count
        self.lock = threading.Lock()
        self.failed = self.handed = self.empty_while_waiting = 0

    def count_failures(self, parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
            with self.lock:
                self.failed += 1

    def work(self) -> None:
        empties = 0
        while empties < 3:
            got = claim(
                self.rt.context,
                SPACE,
                count=self.count,
                names=[NAME],
                wait_ms=0,
                lease_ms=None,
                show=render.claimed,
            )
            with self.lock:
                self.handed += len(got)
                if not got and self.jobs - self.handed > (self.workers - 1) * self.count:
                    self.empty_while_waiting += 1
            if not got:
                empties += 1
                continue
            done = [{"id": j["id"], "attempt": j["attempt"], "complete": {}} for j in got]
            report(self.rt.context, SPACE, reports_in(done))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=500, help="jobs a busy-name workload runs")
    parser.add_argument("--race-jobs", type=int, default=800, help="jobs the 16 workers share")
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    print(
        "Partition keys (DynamoDB: 1,000 write units and 3,000 read units a second per key), one space,"
        " one busy name, no limits, each request reading its token:"
    )
    for batch, hand_out in WORKLOADS:
        print("\n".join(busy_name(args.jobs, min(batch, args.jobs), min(hand_out, args.jobs))), flush=True)
    print("Claims racing each other:")
    for spread in (False, True):
        print(contention(args.race_jobs, spread=spread), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
