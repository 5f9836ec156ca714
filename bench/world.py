"""The benches' world: a runtime on moto's in-memory AWS, built one way for every bench."""

from __future__ import annotations

import threading
from typing import Any

import boto3

from devserver.wiring import (
    BUCKET,
    REGION,
    TABLE,
    Serialized,
    ensure_table,
    local_environment,
    one_backup_per_transaction,
)
from shared.clock import ManualClock
from shared.config import Config
from shared.runtime import Runtime


def moto_runtime(
    clock: ManualClock, *, serialized: bool, callback_transport: Any = None, **settings: Any
) -> tuple[Runtime, Any]:
    """A runtime on moto's in-memory AWS (inside `mock_aws`), and its raw DynamoDB client (for
    `CapacityMeter`). `serialized`: its calls one at a time, as `emit dev` makes them (moto
    checks a condition and writes without a lock; the clock's drain runs threads). Its
    settings are AWS's (`shared.config`'s defaults) but for `settings`."""
    local_environment()
    one_backup_per_transaction()  # moto's own cost, not DynamoDB's: see devserver.wiring
    client: Any = boto3.client("dynamodb", region_name=REGION)
    ensure_table(client)
    s3: Any = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    dynamodb, store = (client, s3)
    if serialized:
        dynamodb, store = Serialized(client, threading.Lock()), Serialized(s3, threading.Lock())
    config = Config(table=TABLE, bucket=BUCKET, **settings)
    rt = Runtime(
        clock=clock, dynamodb=dynamodb, s3=store, config=config, callback_transport=callback_transport
    )
    return rt, client
