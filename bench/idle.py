"""`python -m bench.idle`: what one clock tick with nothing due costs, whatever the number of
spaces (issue 19): `idle tick at <S> spaces: <N> DynamoDB calls` for 1, 1,000 and 100,000;
then of schedules: `idle tick at 100,000 schedules: <N> DynamoDB calls`, each filed at its
next fire time, and the tick at which one of them falls due (`bench.schedules`).

Each space has three names, a finished job of each, and a delivered callback (the one of
`charge-invoice`). The first `REAL` spaces are made through the use cases (create, claim,
report, the stream, the sender) at AWS's settings; the rest are their copies, item by item
(every item of the space, its name renamed, written straight into moto's table: a space
made through the handlers costs some 30 calls, and 100,000 of them would take the bench an
hour). The clock is first run past every timer the real spaces filed (8 days: the
never-claimed window is 7), until nothing is left; the copies are made then (the books'
buckets are the clock's, not the space's: a copy files no timer, which is what a space at
rest is once its timers have fallen due), and one more tick, with nothing due, is counted.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from bench import schedules
from bench.capacity import CapacityMeter
from bench.rest import at_rest
from bench.world import moto_runtime
from devserver.background import StreamReader
from devserver.background import tick as clock_tick
from devserver.wiring import REGION, TABLE
from shared import limits, runtime
from shared.clock import ManualClock
from shared.store import keys

SPACES = (1, 1_000, 100_000)
SCHEDULES = (100_000,)
"""Schedules filed, each at its next fire time (`bench.schedules`): the tick is the same."""
REAL = 10
"""Spaces made through the use cases; the rest are copies of them."""
TARGET_CALLS = 10
"""Issue 19's bound: an idle tick makes at most about this many calls, at any number of spaces."""


def space_name(n: int) -> str:
    """Distinct in every key it appears in, so a copy renames it and nothing else."""
    return f"idle-{n:06d}"


def _is_the_clocks(item: dict[str, Any]) -> bool:
    pk = item["pk"]["S"]
    return pk == keys.BOOK_MAPS or pk.startswith((keys.LEASE_PREFIX, keys.DEADLINE_PREFIX, keys.TIMER_PREFIX))


def _renamed(value: Any, old: str, new: str) -> Any:
    """A DynamoDB JSON value with `old` replaced by `new` in every string it holds."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return value


def _copies(items: list[dict[str, Any]], real: int, total: int) -> Iterator[dict[str, Any]]:
    for n in range(real, total):
        source = space_name(n % real)
        for item in items:
            if source in item["pk"]["S"] or source in item.get("sk", {}).get("S", ""):
                yield _renamed(item, source, space_name(n))


def _copy_spaces(client: Any, real: int, total: int) -> None:
    """Spaces `real` to `total`, copies of the first `real`: straight into moto's table."""
    items = [i for page in client.get_paginator("scan").paginate(TableName=TABLE) for i in page["Items"]]
    items = [i for i in items if not _is_the_clocks(i)]
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].get_table(TABLE)
    stream, table.stream_shard = table.stream_shard, None  # copies make no stream records
    try:
        for item in _copies(items, real, total):
            table.put_item(item, overwrite=True)
    finally:
        table.stream_shard = stream


def idle_tick(spaces: int) -> int:
    """The DynamoDB calls of one idle tick at `spaces` spaces at rest."""
    with mock_aws():
        clock = ManualClock()
        rt, client = moto_runtime(
            clock,
            serialized=True,
            allow_private_callbacks=True,  # no name lookup for the receiver
            callback_transport=httpx.MockTransport(lambda request: httpx.Response(204)),
        )
        stream = StreamReader(rt, client=boto3.client("dynamodbstreams", region_name=REGION))
        real = min(REAL, spaces)
        runtime.install(rt)  # the sender's handler runs on it
        try:
            for n in range(real):
                at_rest(rt, stream, space_name(n))
        finally:
            runtime.install(None)
        tick = rt.config.clock_tick_ms
        clock.advance(8 * limits.DAY_MS)
        for _ in range(10):  # past every timer: each tick drains what is due, then none is
            if rt.sweeper.tick(tick_ms=tick).timers == 0:
                break
            clock.advance(tick)
        # The copies after the drain: moto answers an index query by reading the whole table.
        _copy_spaces(client, real, spaces)
        assert len(rt.space_store.all_spaces()) == spaces, "every space is listed, as a real one is"
        meter = CapacityMeter(client)
        runtime.install(rt)
        try:
            with warnings.catch_warnings():  # nothing to publish at rest, and Powertools says so
                warnings.filterwarnings("ignore", "No application metrics to publish")
                clock.advance(tick)
                clock_tick(tick)  # the last maps go a slot after their slot
                clock.advance(tick)
                meter.attach()
                # The clock's whole tick, as Lambda runs it: the books, then the backlog it publishes.
                clock_tick(tick)
        finally:
            meter.detach()
            runtime.install(None)
        return meter.usage.calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spaces", type=int, nargs="*", default=list(SPACES))
    parser.add_argument("--schedules", type=int, nargs="*", default=list(SCHEDULES))
    args = parser.parse_args(argv)
    for spaces in args.spaces:
        print(f"idle tick at {spaces:,} spaces: {idle_tick(spaces)} DynamoDB calls")
    for count in args.schedules:
        print("\n".join(schedules.describe_idle(schedules.idle_tick(count))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
