"""`make bench`: what one job's life costs in DynamoDB, per job.

Creates 1,000 jobs with 1 KB JSON payloads in batches of 100, claims them 100 at a
time, and completes them in reports of 100, through the same domain code the Lambda
handlers call, on an in-memory DynamoDB; then lets the leases' ends pass and runs the
clock's lease check, which every claim costs later; hands every stream record to the
stream handler; and lets retention remove the jobs, the stream cleaning up after each.
Every request reads its token as a function just started would (a warm one reads it
once every few seconds: `shared.auth.CACHE_MS`), so the figures are an upper bound.
Index (`ready`) writes are counted with the writes that cause them. Every request is
costed by `bench.capacity` from the sizes of the items it writes and reads, under
DynamoDB's published rules (moto's own ConsumedCapacity figures are not DynamoDB's).

The clock's lease check reads the lease book's slot maps each tick, whatever the jobs
(`TickCost`): a fixed cost a tick, not a job's, which a short run shares among few jobs.
The bench measures it on its own (one more tick, over the emptied book) and prints the
figures per job without it too (`per job without the clock's tick: ...`), and what both
books cost an idle tick however much is filed for later (`idle books: ...`).

Two kinds of call follow neither the jobs nor a fixed cost exactly, so a run counts them
apart too (`Measured.apart`, `APART`): wake's (a name's listeners read, and its last-hinted
item written when someone listens, once a stream batch that makes one of its jobs
claimable: how many batches that is follows how the records fall into them) and the
spread's sampled count (a create of n jobs counts itself with chance n / 128: how many of
a run's creates write it is chance). And the timers a process files once a period or a
slot, whatever the jobs (`shared.timers`: a name's never-claimed check; the books' slot
marks): a run's few, by when its jobs fall due.

Before the last two lines, what a schedule costs (`bench.schedules`): a PUT that makes one
(`schedule put: ...`), and the tick that makes its job at a fire time, everything it does
for it (`schedule fire: <W> write units, <R> read units, <C> calls`).

The last line is `per job: <W> write units, <R> read units, <C> calls`.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3
import httpx
from moto import mock_aws

from bench import drain, schedules
from bench.capacity import CapacityMeter, MeteredCall, Usage
from bench.partitions import (
    TABLE,
    PartitionLoad,
    describe_family,
    describe_load,
    describe_slot_maps,
    describe_token_load,
    hashed,
)
from bench.payloads import order_payload
from bench.spread import warm_up
from bench.world import moto_runtime
from devserver.background import StreamReader, expire_ttl
from devserver.wiring import (
    REGION,
)
from infra.constants import STREAM_BATCH_SIZE
from infra.stream_filters import passes
from shared import limits, render
from shared.auth import Tokens
from shared.clock import ManualClock
from shared.job import JobStatus
from shared.jobs.claim import claim
from shared.jobs.create import create
from shared.jobs.outcomes import Applied
from shared.jobs.report import report
from shared.runtime import Runtime
from shared.schema import NewJob, NewToken, SettingsPatch, reports_in
from shared.store import keys
from shared.store.listeners import HINT_PREFIX, LISTEN_PREFIX
from shared.sweeper import TickReport

SPACE = "bench"
TARGET_WRITE_UNITS = 6
TARGET_READ_UNITS = 1
HOOK = {"url": "https://hooks.example.com/emit"}
HOT_KEY_WORKLOADS = ((100, 10), (1, 1))
"""(jobs a create, jobs a claim and a report) of the workloads whose partition keys are shown."""


def random_payload(rng: random.Random, size: int = 1_000) -> dict[str, Any]:
    """1 KB of random base64, which compresses poorly: the worst case for the job item."""
    return {"blob": base64.b64encode(rng.randbytes(size * 3 // 4 - 9)).decode()}


_LOAD = keys.name_load("space", "name")
COUNT_PREFIXES = (keys.TALLIED_PREFIX, keys.COUNT_PREFIX, "MIN#", keys.WAIT_PREFIX, keys.WAIT_HOURS_PREFIX)
"""The stream's counts' keys (`shared.store.tallies`): a transaction a batch of records."""

APART: dict[str, tuple[tuple[str, ...], str | None]] = {
    "wake": ((LISTEN_PREFIX, HINT_PREFIX), None),
    "sampled count": ((_LOAD["pk"].partition("#")[0] + "#",), _LOAD["sk"]),
}
"""The calls counted apart (see the module's docstring), by the keys they touch (partition
key prefixes, and the sort key if one): wake's listeners and last-hinted items
(`shared.store.listeners`), a name's sampled count (`keys.name_load`); and the timers'
filings (`filings`: a name's timers once a period, a book's slot marks once a slot)."""


_EQUALS = re.compile(r"(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)")


def apart_of(call: MeteredCall) -> str | None:
    """Which of `APART` a call is (None: neither): by the one item or partition it touches."""
    params = call.params
    key = params.get("Key") or params.get("Item") or {}
    pk = str((key.get("pk") or {}).get("S", ""))
    sk = str((key.get("sk") or {}).get("S", ""))
    if call.operation == "Query" and "IndexName" not in params:
        names, values = (
            params.get("ExpressionAttributeNames", {}),
            params.get("ExpressionAttributeValues", {}),
        )
        for name, placeholder in _EQUALS.findall(params.get("KeyConditionExpression", "")):
            if names.get(name, name) == "pk":
                pk = str(values[placeholder].get("S", ""))
    if call.operation == "TransactWriteItems" and _counts_only(params):
        return "counts"
    if call.operation in ("PutItem", "UpdateItem") and (
        pk.startswith(keys.TIMER_PREFIX) or pk == keys.BOOK_MAPS
    ):
        return "filings"
    for kind, (prefixes, sort) in APART.items():
        if pk.startswith(prefixes) and sort in (None, sk):
            return kind
    return None


def _counts_only(params: Mapping[str, Any]) -> bool:
    """A transaction of the stream's counts and nothing else."""
    items = [next(iter(action.values())) for action in params.get("TransactItems", ())]
    pks = [str(((i.get("Key") or i.get("Item") or {}).get("pk") or {}).get("S", "")) for i in items]
    return bool(pks) and all(pk.startswith(COUNT_PREFIXES) for pk in pks)


def _listener(apart: dict[str, Usage], partitions: PartitionLoad | None) -> Callable[[MeteredCall], None]:
    """The meter's listener: counts the calls of `APART` apart, and the load by key if asked."""

    def listen(call: MeteredCall) -> None:
        kind = apart_of(call)
        if kind is not None:
            apart[kind].add(call.operation, write=call.write_units, read=call.read_units)
        if partitions is not None:
            partitions.record(call)

    return listen


@dataclass(frozen=True)
class Measured:
    """One run of `run`: its phases (units since each phase began), the cost of one tick of
    the clock's lease check over the emptied book (`tick`: what every tick costs whatever the
    jobs, and a part of the `lease check` phase), and with `load` the units per partition key.
    `apart`: the calls of `APART` among the phases' (the tick makes none), and `batches` the
    stream batches they were applied in."""

    jobs: int
    phases: dict[str, Usage]
    tick: Usage
    load: PartitionLoad | None = None
    apart: dict[str, Usage] = field(default_factory=dict)
    batches: int = 0

    @property
    def total(self) -> Usage:
        return total(self.phases)

    def per_job(self, *, with_tick: bool = True, with_apart: bool = True) -> tuple[float, float, float]:
        """(write units, read units, calls) a job; without the tick: the job's own; without
        `apart`: less wake's and the sampled count's too (what is exactly per job or fixed)."""
        t, tick = self.total, self.tick
        w, r, c = t.write_units, t.read_units, float(t.calls)
        if not with_tick:
            w, r, c = w - tick.write_units, r - tick.read_units, c - tick.calls
        if not with_apart:
            for usage in self.apart.values():
                w, r, c = w - usage.write_units, r - usage.read_units, c - usage.calls
        return w / self.jobs, r / self.jobs, c / self.jobs


def run(
    *,
    jobs: int,
    batch: int,
    payload: Any,
    hand_out: int | None = None,
    load: bool = False,
    callback: bool = False,
    setup: Callable[[Runtime], None] | None = None,
    job_fields: Callable[[int], dict[str, Any]] | None = None,
) -> Measured:
    """Create `jobs` jobs `batch` a request, claim and complete them `hand_out` a request
    (default `batch`), then run the lease check. With `load`, every request first reads
    its token, as a handler does, and the units are also counted per partition key. With
    `callback`, every job has one, which its receiver takes at the first try. `job_fields`
    gives the n-th job fields of its own (a `concurrencyKey`)."""
    hand_out = hand_out or batch
    with mock_aws():
        clock = ManualClock()
        # One call at a time: moto's table is not safe for the clock's threads (DynamoDB is).
        rt, client = moto_runtime(
            clock,
            serialized=True,
            allow_private_callbacks=True,  # no name lookup for the receiver below
            callback_transport=httpx.MockTransport(lambda request: httpx.Response(204)),
        )
        stream = StreamReader(rt, client=boto3.client("dynamodbstreams", region_name=REGION))
        rng = random.Random(7)
        token = _prepared(rt, setup)
        meter = CapacityMeter(client)
        partitions = PartitionLoad(meter.table_spec, meter.item) if load else None
        apart = {kind: Usage() for kind in (*APART, "filings", "counts")}
        meter.listener = _listener(apart, partitions)
        meter.attach()
        phases: dict[str, Usage] = {}

        def request() -> None:
            # The units: a function just started, which reads the token (the worst case).
            # The partition keys: warm functions read `T` once every few seconds, whatever
            # the number of jobs, so its load follows from the rate, not from a count per
            # job: `describe_token_load` gives it.
            if not load:
                Tokens(rt.tokens.store, clock).authenticate(f"Bearer {token}")

        meter.reset()
        for b in range(jobs // batch):
            new = [
                NewJob.model_validate(
                    {"name": "charge-invoice", "payload": payload(rng)}
                    | ({"callback": HOOK} if callback else {})
                    | (job_fields(b * batch + i) if job_fields else {})
                )
                for i in range(batch)
            ]
            request()
            create(rt.context, SPACE, new, batch=batch > 1)
        phases["create"] = meter.usage

        meter.reset()
        held: list[dict[str, Any]] = []
        while len(held) < jobs:
            request()
            got = claim(
                rt.context,
                SPACE,
                count=hand_out,
                names=["charge-invoice"],
                wait_ms=0,
                lease_ms=None,
                show=render.claimed,
            )
            if not got:
                raise RuntimeError(f"claimed only {len(held)} of {jobs} jobs")
            held += got
        phases["claim"] = meter.usage

        meter.reset()
        for start in range(0, jobs, hand_out):
            reports = [
                {"id": j["id"], "attempt": j["attempt"], "complete": {"result": {"chargeId": f"ch_{i}"}}}
                for i, j in enumerate(held[start : start + hand_out])
            ]
            request()
            outcomes = report(rt.context, SPACE, reports_in(reports))
            if any(o != Applied(JobStatus.COMPLETED) for o in outcomes):
                raise RuntimeError(f"a report was refused: {outcomes}")
        phases["complete"] = meter.usage

        tick, batches, records = later(rt, clock, meter, stream, jobs=jobs, phases=phases)
        if partitions is not None and batches:
            # The counts are written once a batch: a short run's batches are part full, where
            # a busy name's are full; its counts' keys are charged as at full batches.
            partitions.scale(COUNT_PREFIXES, (records / STREAM_BATCH_SIZE) / batches)
        return Measured(jobs, phases, tick, partitions, apart, batches)


def later(
    rt: Runtime,
    clock: ManualClock,
    meter: CapacityMeter,
    stream: StreamReader,
    *,
    jobs: int,
    phases: dict[str, Usage],
) -> tuple[Usage, int, int]:
    """What the jobs cost after their last request: the clock's lease check, the stream
    handler, and retention (the stream cleaning up after each removed job). Returns what
    one more tick's lease check costs over the emptied book (every tick's fixed cost), and
    the stream batches applied."""
    meter.reset()
    clock.advance(24 * 3_600_000)
    report = TickReport()
    rt.sweeper.expire_leases(report)
    if report.expired:
        raise RuntimeError(f"{report.expired} completed jobs were expired")
    phases["lease check"] = meter.usage

    meter.reset()
    rt.sweeper.expire_leases(TickReport())
    tick = meter.usage

    meter.reset()
    batches, records = apply_stream(rt, stream)
    phases["stream"] = meter.usage

    meter.detach()  # TTL's own deletes are free, and not the service's work
    clock.advance(limits.DEFAULT_COMPLETED_RETENTION_MS)
    if expire_ttl(rt) < jobs:
        raise RuntimeError("retention removed fewer jobs than were made")
    meter.attach()
    meter.reset()
    more, _ = apply_stream(rt, stream)
    batches += more
    phases["retention"] = meter.usage
    meter.detach()
    return tick, batches, records


def apply_stream(rt: Runtime, stream: StreamReader) -> tuple[int, int]:
    """Every new stream record Lambda's filters pass, through the stream handler's
    processor, as Lambda hands them: in batches of the trigger's size
    (`infra.constants.STREAM_BATCH_SIZE`; a read answers up to 1,000 records a shard: read
    until none is left), each begun as the handler begins one (`Wake.new_batch`), its
    records applied, its deliveries handed over and its counts kept (`shared.counts`: one
    transaction a batch); answers the batches and the records they held."""
    batches = handed = 0
    while read := stream.read():
        # Lambda filters before it batches (`infra.stream_filters`): the table's other records
        # (the counts' own writes among them) never reach the handler nor fill its batches.
        records = [r for r in read if passes(r)]
        handed += len(records)
        for start in range(0, len(records), STREAM_BATCH_SIZE):
            batches += 1
            rt.wake.new_batch()
            due, counted = [], []
            for record in records[start : start + STREAM_BATCH_SIZE]:
                found, tally = rt.stream.apply(record)
                counted.append(tally)
                if found is not None:
                    due.append(found)
            rt.stream.deliver(due)
            rt.stream.count(counted)
    return batches, handed


def settled_notices(rt: Runtime) -> None:
    """Every job that completes sends a settled notice (`shared.notify`)."""
    rt.settings.patch(
        SPACE, SettingsPatch.model_validate({"onSettled": {"name": "audit", "statuses": ["COMPLETED"]}})
    )


def describe_notices(plain: dict[str, Usage], notified: dict[str, Usage], jobs: int) -> list[str]:
    """What a notice adds to a job's life: the stream makes it (one conditional put of the
    job, whose id comes from its ending: about 2 write units with its index entry, at
    1,000 jobs); the notice job is then a job like any other (the figures above, once
    claimed and completed)."""
    lines = ["A settled notice for every job (onSettled), made by the stream, per job notified:"]
    for phase in ("stream", "retention"):
        added_w = (notified[phase].write_units - plain[phase].write_units) / jobs
        added_r = (notified[phase].read_units - plain[phase].read_units) / jobs
        lines.append(f"  {phase:<12}{added_w:>+12.3f} write units{added_r:>+10.3f} read units")
    t = total(notified)
    lines.append(
        f"  total with the notice made (not yet run): {t.write_units / jobs:.3f} write units, "
        f"{t.read_units / jobs:.3f} read units"
    )
    return lines


def _prepared(rt: Runtime, setup: Callable[[Runtime], None] | None) -> str:
    """An admin token, after `setup` (e.g. a name's policy, `bench.limits`) has run: before
    anything is counted."""
    if setup is not None:
        setup(rt)
    return str(rt.tokens.mint(NewToken(scopes=["admin"]))["token"])


def spread_name(rt: Runtime) -> None:
    """Bring the busy name to the width its load at 10,000 jobs/s gives it (`bench.spread`),
    as a busy name is in production: these workloads make their jobs at one instant of the
    bench's clock, too fast for the name's own sampled count to spread it."""
    assert isinstance(rt.clock, ManualClock)
    warm_up(rt, rt.clock)


def meets_target(write_units: float, read_units: float) -> bool:
    """Whether a job's figures meet the bench's target (TARGET_WRITE_UNITS, TARGET_READ_UNITS)."""
    return write_units <= TARGET_WRITE_UNITS and read_units <= TARGET_READ_UNITS


def describe_tick(measured: Measured) -> str:
    """The clock's fixed cost a tick, and the figures a job without it."""
    tick, jobs = measured.tick, measured.jobs
    own_w, own_r, _ = measured.per_job(with_tick=False)
    return (
        f"  of which every tick of the clock's lease check, whatever the jobs (it reads the"
        f" lease book's slot maps): {tick.write_units:g} write units, {tick.read_units:g} read units,"
        f" {tick.calls} calls ({tick.read_units / jobs:.3f} read units a job here);"
        f" a job without it: {own_w:.3f} write units, {own_r:.3f} read units"
    )


def total(phases: dict[str, Usage]) -> Usage:
    out = Usage()
    for usage in phases.values():
        out.write_units += usage.write_units
        out.read_units += usage.read_units
        out.calls += usage.calls
    return out


def describe(name: str, phases: dict[str, Usage], jobs: int) -> list[str]:
    lines = [f"{name}:", f"  {'phase':<12}{'write units':>12}{'read units':>14}{'calls':>10}   (per job)"]
    for phase, usage in phases.items():
        w, r, c = usage.write_units / jobs, usage.read_units / jobs, usage.calls / jobs
        lines.append(f"  {phase:<12}{w:>12.3f}{r:>14.3f}{c:>10.3f}")
        for op, figures in sorted(usage.by_operation.items()):
            lines.append(
                f"    {op:<20}{figures['write_units'] / jobs:>10.3f}"
                f"{figures['read_units'] / jobs:>14.3f}{figures['calls'] / jobs:>10.3f}"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--drain-buckets", type=int, default=1_600, help="leases in the lease-check drain")
    parser.add_argument(
        "--idle-buckets", type=int, default=10_000, help="buckets filed for later, at an idle tick"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

    worst = run(jobs=args.jobs, batch=args.batch, payload=random_payload)
    print(
        "\n".join(
            describe("random 1 KB payloads, which compress poorly (the worst case)", worst.phases, args.jobs)
        )
    )
    worst_w, worst_r, _ = worst.per_job()
    print(f"  total: {worst_w:.3f} write units, {worst_r:.3f} read units\n")

    typical = run(jobs=args.jobs, batch=args.batch, payload=order_payload)
    print("\n".join(describe("typical 1 KB JSON payloads (an order)", typical.phases, args.jobs)))
    per_w, per_r, per_c = typical.per_job()
    verdict = "meets" if meets_target(per_w, per_r) else "misses"
    target = f"{TARGET_WRITE_UNITS} write units and {TARGET_READ_UNITS} read unit per job"
    print(f"  total: {per_w:.3f} write units, {per_r:.3f} read units: {verdict} the target of {target}")
    print(describe_tick(typical) + "\n")

    notified = run(jobs=args.jobs, batch=args.batch, payload=order_payload, setup=settled_notices)
    print("\n".join(describe_notices(typical.phases, notified.phases, args.jobs)) + "\n")

    print(
        "Partition keys (DynamoDB: 1,000 write units and 3,000 read units a second per key, "
        "table and index alike), one space, one busy name (spread as its load would), no limits:"
    )
    print(
        "  not in these workloads: idempotency keys (K#{space}#{key}, one key each) and name"
        " policies (S#{space} name#..., written by an admin); callbacks have a workload of their own"
    )
    spread = hashed(SPACE)
    workloads = [(most_created, most_handed, False) for most_created, most_handed in HOT_KEY_WORKLOADS]
    for most_created, most_handed, callback in [*workloads, (100, 10, True)]:
        batch, hand_out = min(most_created, args.jobs), min(most_handed, args.jobs)
        workload = f"{batch} jobs a create, {hand_out} a claim and a report"
        if callback:
            workload = f"jobs with a callback, {batch} a create, {hand_out} a claim and a report"
        load = run(
            jobs=args.jobs,
            batch=batch,
            payload=order_payload,
            hand_out=hand_out,
            load=True,
            callback=callback,
            setup=spread_name,
        ).load
        assert load is not None
        print("\n".join(describe_load(workload, load, args.jobs, {SPACE}, spread)))
        # The space's job partitions, by a hash of the id: at thousands of jobs a second each
        # takes its even share (a short run puts a few more jobs on one by chance).
        print(describe_family(load, args.jobs, f"{keys.JOB_PREFIX}{SPACE}#", keys.JOB_SHARDS, where=TABLE))
        if not callback:
            print(describe_token_load(requests_per_job=1 / batch + 2 / hand_out))
            print(describe_slot_maps())
    for per_claim in (1, 10):
        measured = drain.measure(buckets=args.drain_buckets // per_claim, per_bucket=per_claim)
        print(drain.describe(measured, f"{per_claim} job{'s' if per_claim > 1 else ''} a claim"))
    print(drain.describe_idle({filed: drain.idle(filed=filed) for filed in (1, args.idle_buckets)}))
    fired = schedules.fire_cost()
    print(schedules.describe("schedule put", fired.put))
    print(schedules.describe("schedule fire", fired.fire))
    own_w, own_r, own_c = typical.per_job(with_tick=False)
    print(
        f"per job without the clock's tick: {own_w:.2f} write units, {own_r:.2f} read units,"
        f" {own_c:.2f} calls"
    )
    print(f"per job: {per_w:.2f} write units, {per_r:.2f} read units, {per_c:.2f} calls")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
