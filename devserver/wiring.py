"""Local wiring: an embedded in-memory DynamoDB and S3 (moto), or any DynamoDB endpoint."""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import boto3
import moto.dynamodb.models as ddb_models
from moto.core.model_instances import model_data
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table

from devserver.embedded import compat as embedded
from shared.clock import Clock, SystemClock
from shared.config import Config
from shared.runtime import Runtime
from shared.store.table import create_table_request

TABLE = Config.local().table
BUCKET = Config.local().bucket or ""
REGION = "us-east-1"

LOCAL_ENV = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": REGION,
    # boto3 >= 1.44 sends streams calls to an account endpoint that moto does not serve.
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


class Serialized:
    """A client whose calls run one at a time.

    moto's in-memory DynamoDB checks a condition and writes without a lock, so two
    threads could both pass one condition. DynamoDB itself applies writes to an item
    one at a time; serializing every call restores that guarantee locally.
    """

    def __init__(self, client: Any, lock: threading.Lock) -> None:
        self._client = client
        self._lock = lock

    @property
    def lock(self) -> threading.Lock:
        return self._lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name.startswith("get_paginator") or name == "get_waiter":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        return call


def keep_streams_through_rollbacks() -> None:
    """moto restores a deep copy of every table a cancelled transaction touched, its stream
    shard included: readers of the stream then hold the orphaned shard and see nothing
    more, and the cancelled writes' records stay in it. DynamoDB keeps one stream and
    records only what was written; so, locally, the live shard is put back and the
    records of the cancelled writes dropped. (With `one_backup_per_transaction` the backup
    shares the live shard rather than copying it: then only the records are dropped.)"""
    original = DynamoDBBackend.transact_write_items
    if getattr(original, "keeps_streams", False):
        return

    @functools.wraps(original)  # with its marks: each patch is made once, in either order
    def transact_write_items(self: Any, transact_items: Any) -> None:
        shards = {
            name: (table.stream_shard, len(table.stream_shard.items))
            for name, table in self.tables.items()
            if table.stream_shard is not None
        }
        try:
            original(self, transact_items)
        except Exception:
            # Whatever moto raises, it has undone the transaction's writes (or made none).
            for name, (shard, length) in shards.items():
                table = self.tables.get(name)
                if table is not None:
                    del shard.items[length:]
                    shard.table = table
                    table.stream_shard = shard
            raise

    transact_write_items.keeps_streams = True  # type: ignore[attr-defined]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


class _BackupOnce(threading.local):
    """Stands in for the `copy` module inside moto's DynamoDB models. moto backs up every
    table a transaction touches with a deep copy (its stream's records included) once
    per action, before any action runs: a transaction of 100 puts copied a large table
    100 times over, the same state each time. Inside one transaction the first copy of
    each table serves every action; elsewhere this is `copy` itself.

    The backup leaves out the stream shard (the live one is shared: a rollback keeps it
    and drops the cancelled writes' records, `keep_streams_through_rollbacks`), which
    otherwise makes each transaction copy every record the table ever streamed. And moto
    keeps every instance of its models for its dashboard (`instances_tracked`) until the
    mock ends, so each backup's items, indexes and records would stay in memory for good,
    a whole table a transaction: the backup's own instances are not kept."""

    def __init__(self) -> None:
        self.backups: dict[int, Any] | None = None

    def deepcopy(self, value: Any, memo: Any = None) -> Any:
        if self.backups is None or not isinstance(value, Table):
            return copy.deepcopy(value, memo)
        if id(value) not in self.backups:
            shard = value.stream_shard
            with _untracked(model_data["dynamodb"].values()):
                self.backups[id(value)] = copy.deepcopy(value, {} if shard is None else {id(shard): shard})
        return self.backups[id(value)]

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


@contextlib.contextmanager
def _untracked(models: Iterable[Any]) -> Iterator[None]:
    """moto forgets the instances of `models` made inside (only its dashboard reads them)."""
    kept = [
        (tracked, len(tracked))
        for model in models
        if isinstance(tracked := getattr(model, "instances_tracked", None), list)
    ]
    try:
        yield
    finally:
        for tracked, length in kept:
            del tracked[length:]


def one_backup_per_transaction() -> None:
    """Make moto back up each table once per transaction, not once per action, and without
    its stream (see `_BackupOnce`): the rollback is the same, the copying a fraction. The
    stream's own rollback comes with it (`keep_streams_through_rollbacks`)."""
    keep_streams_through_rollbacks()
    original = DynamoDBBackend.transact_write_items
    if getattr(original, "backs_up_once", False):
        return
    shim = _BackupOnce()
    ddb_models.copy = shim  # type: ignore[assignment]

    @functools.wraps(original)  # with its marks: each patch is made once, in either order
    def transact_write_items(self: Any, transact_items: Any) -> None:
        shim.backups = {}
        try:
            original(self, transact_items)
        finally:
            shim.backups = None

    transact_write_items.backs_up_once = True  # type: ignore[attr-defined]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def local_environment() -> None:
    for name, value in LOCAL_ENV.items():
        os.environ.setdefault(name, value)


def ensure_table(client: Any, table: str = TABLE) -> None:
    existing = client.list_tables().get("TableNames", [])
    if table not in existing:
        client.create_table(**create_table_request(table))
        client.update_time_to_live(
            TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
        )


def embedded_dynamodb(*, fast: bool) -> Any:
    """The in-memory DynamoDB's client: boto3 into moto, or (`fast`, with the moto version it
    was written for) moto's backend called directly, with per-partition queries
    (devserver.embedded; proven equal to the former by tests/local/test_conformance.py)."""
    if fast and embedded.supported():
        from devserver.embedded import heap  # noqa: PLC0415 - only with the fast path
        from devserver.embedded.client import DirectDynamoDB  # noqa: PLC0415 - imports moto internals

        heap.keep_collections_short()
        return DirectDynamoDB(REGION)
    if fast:
        print(
            f"emit dev: moto {embedded.installed_moto()} is not {embedded.MOTO_VERSION}, the version the "
            "fast embedded DynamoDB was written for: using plain moto (slower with many jobs)",
            file=sys.stderr,
        )
    return boto3.client("dynamodb", region_name=REGION)


def build_runtime(
    *,
    clock: Clock | None = None,
    config: Config | None = None,
    callback_transport: Any = None,
    fast: bool = False,
    wake_poster: Any = None,
) -> Runtime:
    """Clients, table and bucket for local use, with `config`'s settings (by default
    `Config.local()`); call inside an active moto mock unless `config.dynamodb_endpoint`
    names a real DynamoDB-compatible endpoint. `fast`: the embedded DynamoDB without
    botocore, with per-partition queries (what `emit dev` runs)."""
    config = config or Config.local()
    local_environment()
    endpoint = config.dynamodb_endpoint
    if not endpoint:
        keep_streams_through_rollbacks()
        one_backup_per_transaction()
    lock = threading.Lock()
    if endpoint:
        raw_ddb = boto3.client("dynamodb", region_name=REGION, endpoint_url=endpoint)
    else:
        raw_ddb = embedded_dynamodb(fast=fast)
    ensure_table(raw_ddb, config.table)
    dynamodb = raw_ddb if endpoint else Serialized(raw_ddb, lock)
    s3 = boto3.client("s3", region_name=REGION, endpoint_url=config.s3_endpoint)
    if config.bucket and config.bucket not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=config.bucket)
    return Runtime(
        clock=clock or SystemClock(),
        dynamodb=dynamodb,
        s3=Serialized(s3, threading.Lock()),
        config=config,
        callback_transport=callback_transport,
        wake_poster=wake_poster,
    )
