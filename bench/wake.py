"""`python -m bench.wake`: what waiting by push costs and how soon it wakes (issue 19).

- `idle worker: $<x> a month`: one worker connected to the wake WebSocket around the clock
  with nothing to do, on AWS: computed from AWS's prices (us-east-1, on demand, no free
  tier) and the settings (`emit.wake`'s regular claim and keep-alive, API Gateway's 2-hour
  connections), with the DynamoDB read units of its empty claim measured here by
  `bench.capacity` (a token read as by a function just started, the name's policies, the
  name's ready shards). Lambda time is an estimate (marked so): the rest is arithmetic.
- `wake: <n> ms median`: `emit dev`, one SDK worker listening on it, 100 jobs created one
  at a time, each only once the worker is idle again: from the create request to the
  handler starting. The worker's regular claim is put off for the run, so each job is
  claimed on a hint. Jobs take turns over a few names, so that no name is hinted twice
  within a second (the contract's coalescing would hold the second hint back).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

from moto import mock_aws

from bench.capacity import CapacityMeter, Usage
from bench.local import SPACE, TOKEN, Client, emit_dev
from bench.world import moto_runtime
from devserver import gateway
from shared.clock import ManualClock
from shared.limits import HOUR_MS, MINUTE_MS
from shared.runtime import install
from shared.schema import NewToken
from shared.wake import CONNECTION_MS

# -- prices (us-east-1, on demand; the README's sources) ------------------------------------

CONNECTION_MINUTE = 0.25 / 1e6
"""API Gateway WebSocket: $0.25 per million connection minutes [1.7]."""
MESSAGE = 1.00 / 1e6
"""API Gateway WebSocket: $1.00 per million messages, sent or received, in 32 KB units [1.7]."""
HTTP_REQUEST = 1.00 / 1e6
"""API Gateway HTTP API: $1.00 per million requests [1.7]."""
LAMBDA_REQUEST = 0.20 / 1e6
"""Lambda: $0.20 per million requests [2.6]."""
LAMBDA_GB_S = 0.0000133334
"""Lambda on arm64: per GB-second [2.6]."""
READ_UNIT = 0.125 / 1e6
WRITE_UNIT = 0.625 / 1e6
"""DynamoDB on demand: per read and write request unit [3.9]."""

MINUTES_A_MONTH = 730 * 60
"""AWS's month: 730 hours."""
CLAIM_MS = 50
"""ESTIMATE: an empty claim (waitMs 0) on a warm function: a token read, a query, four index queries."""
CLAIM_GB = 0.25
"""The claim function's 256 MB (`shared.routes`)."""
CONNECT_CALLS_MS = 3 * 50
"""ESTIMATE: `$connect`, `listen` and `$disconnect` once a connection, 50 ms each at 256 MB."""
CONNECT_WRITE_UNITS = 6
"""A connection's records: its item (1), the listen's update (1) and item (1), and at the
end the two removed (2), and a margin (1)."""


@dataclass(frozen=True)
class Line:
    what: str
    count: float
    dollars: float


def idle_worker(claim: Usage, *, claim_every_s: float, keepalive_s: float, connection_ms: int) -> list[Line]:
    """One idle listening worker's month on AWS, line by line (the total is their sum)."""
    claims = MINUTES_A_MONTH * 60 / claim_every_s
    connections = MINUTES_A_MONTH * MINUTE_MS / connection_ms
    keepalives = MINUTES_A_MONTH * 60 / keepalive_s
    messages = keepalives + 2 * connections  # each connection's listen, and its answer
    return [
        Line("WebSocket connection minutes", MINUTES_A_MONTH, MINUTES_A_MONTH * CONNECTION_MINUTE),
        Line("WebSocket messages (keep-alives, listens)", messages, messages * MESSAGE),
        Line("claims: HTTP API requests", claims, claims * HTTP_REQUEST),
        Line("claims: Lambda requests", claims, claims * LAMBDA_REQUEST),
        Line("claims: Lambda GB-s (estimate)", claims * CLAIM_MS / 1000 * CLAIM_GB, 0),
        Line("claims: DynamoDB read units", claims * claim.read_units, claims * claim.read_units * READ_UNIT),
        Line("connections: Lambda requests", 3 * connections, 3 * connections * LAMBDA_REQUEST),
        Line("connections: Lambda GB-s (estimate)", connections * CONNECT_CALLS_MS / 1000 * CLAIM_GB, 0),
        Line("connections: DynamoDB write units", connections * CONNECT_WRITE_UNITS, 0),
    ]


def priced(lines: list[Line]) -> list[Line]:
    """The lines with the GB-s and write units priced."""
    out = []
    for line in lines:
        dollars = line.dollars
        if "GB-s" in line.what:
            dollars = line.count * LAMBDA_GB_S
        elif "write units" in line.what:
            dollars = line.count * WRITE_UNIT
        out.append(Line(line.what, line.count, dollars))
    return out


def empty_claim_usage() -> Usage:
    """The DynamoDB usage of one empty claim, as the SDK's regular claim makes it (its
    worker's names, `waitMs` 0), by a function that reads the token afresh."""
    with mock_aws():
        clock = ManualClock()
        rt, client = moto_runtime(clock, serialized=False)
        install(rt)
        try:
            token = str(rt.tokens.mint(NewToken(scopes=["work"], name="bench"))["token"])
            rt.space_store.register_names(SPACE, {"w"}, clock.now_ms())
            meter = CapacityMeter(client)
            meter.attach()
            clock.advance(HOUR_MS)  # past every cache: a function's first request
            body = b'{"count": 1, "names": ["w"], "waitMs": 0}'
            path = f"/v1/spaces/{SPACE}/jobs:claim"
            matched = gateway.match("POST", path)
            assert isinstance(matched, gateway.Matched)
            headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
            event = gateway.event(matched, method="POST", path=path, query="", headers=headers, body=body)
            answer = gateway.invoke(matched, event)
            assert answer["statusCode"] == 200, answer
            return meter.usage
        finally:
            install(None)


HINTING_PROCESSES = 64
"""Stream functions that may hint one name in the same second: one a stream shard, and a
table taking 10,000 jobs a second has some tens of them."""


def hint_usage(listeners: int) -> Usage:
    """The DynamoDB usage of one hint of a name `listeners` connections listen to: the query
    of its listeners (consistent) and the conditional write of its last-hinted item."""
    with mock_aws():
        clock = ManualClock()
        rt, client = moto_runtime(clock, serialized=False)
        install(rt)
        try:
            until = clock.now_ms() + HOUR_MS
            for n in range(listeners):
                rt.wake.store.open(
                    f"c{n:05d}", {"token": "t", "scopes": ["work"]}, now_ms=clock.now_ms(), until_ms=until
                )
                rt.wake.store.add(f"c{n:05d}", SPACE, ["w"], until_ms=until)
            meter = CapacityMeter(client)
            meter.attach()
            rt.wake.hint(SPACE, "w")
            return meter.usage
        finally:
            install(None)


def hint_ceilings(listeners: int = 1_000) -> list[str]:
    """The two items every hint of one name touches, and how far they are from DynamoDB's
    limits when `HINTING_PROCESSES` processes hint the name each second."""
    usage = hint_usage(listeners)
    writes = 2 * HINTING_PROCESSES  # each: the hint let through, or one held back
    reads = usage.read_units * HINTING_PROCESSES
    return [
        f"  one hint of a name {listeners:,} connections listen to: {usage.read_units:g} read units, "
        f"{usage.write_units:g} write units in {usage.calls} calls",
        f"ceiling: WH#{{space}}#{{name}} (the name's last-hinted item): {writes} writes a second at "
        f"{HINTING_PROCESSES} hinting processes, {writes / 10:.0f}% of its limit",
        f"ceiling: WL#{{space}}#{{name}} (its listeners, {listeners:,}): {reads:,.0f} read units a second at "
        f"{HINTING_PROCESSES} hinting processes, {reads / 30:.0f}% of its limit",
    ]


def wake_latencies(jobs: int = 100, names: int = 8) -> list[float]:
    """Milliseconds from each create to its handler starting, `emit dev` and one listening worker."""
    from emit import Emit, HeldJob, wake  # noqa: PLC0415 - the SDK, only for this run

    wake.CLAIM_EVERY_S = 3_600.0  # a job is claimed on its hint, never on the regular claim
    wake.SOON_AFTER_LISTENING_S = ()
    started: dict[str, float] = {}
    seen = threading.Condition()
    with emit_dev() as server, Emit(server.url, TOKEN, SPACE) as emit:

        @emit.worker(names=[f"w{i}" for i in range(names)], poll_wait=1.0, report_interval=0.2)
        def handle(job: HeldJob[Any]) -> None:
            with seen:
                started[job.id] = time.perf_counter()
                seen.notify_all()

        thread = threading.Thread(target=handle.run, daemon=True)
        thread.start()
        try:
            _until(lambda: handle.listening, 60)
            client = Client(server.url)
            latencies: list[float] = []
            last: dict[int, float] = {}
            for n in range(jobs):
                name = n % names
                # The name's last hint more than a second ago, and the worker idle again.
                time.sleep(max(0.1, last.get(name, 0) + 1.2 - time.perf_counter()))
                sent = time.perf_counter()
                last[name] = sent
                (job,) = client.create([{"name": f"w{name}"}])
                with seen:
                    seen.wait_for(functools.partial(started.__contains__, job), timeout=30)
                latencies.append((started[job] - sent) * 1000)
            return latencies
        finally:
            handle.stop()
            thread.join(timeout=30)


def _until(check: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("the worker never listened")
        time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.wake", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--jobs", type=int, default=100, help="jobs created one at a time for the wake median"
    )
    parser.add_argument("--no-latency", action="store_true", help="only the idle worker's cost")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", "No application metrics to publish")
    from emit import wake  # noqa: PLC0415

    usage = empty_claim_usage()
    lines = priced(
        idle_worker(
            usage, claim_every_s=wake.CLAIM_EVERY_S, keepalive_s=wake.KEEPALIVE_S, connection_ms=CONNECTION_MS
        )
    )
    for line in lines:
        print(f"  {line.what}: {line.count:,.1f} = ${line.dollars:.4f}")
    print(f"  (an empty claim: {usage.read_units:g} read units in {usage.calls} calls)")
    for ceiling in hint_ceilings():
        print(ceiling)
    print(f"idle worker: ${sum(line.dollars for line in lines):.3f} a month")
    if not args.no_latency:
        latencies = wake_latencies(args.jobs)
        tail = statistics.quantiles(latencies, n=10)[-1]
        print(f"  max {max(latencies):.0f} ms, 90th percentile {tail:.0f} ms")
        print(f"wake: {statistics.median(latencies):.0f} ms median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
