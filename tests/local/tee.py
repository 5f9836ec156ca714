"""Two embedded DynamoDBs side by side: plain moto through boto3, and `emit dev`'s fast one.

`Tee` is a DynamoDB client that makes each call on both, with the same parameters, keeps
any difference between their answers (or errors), and hands the store plain moto's. A
runtime built on it runs the store exactly as on plain moto while proving, call by call,
that the fast path answers the same.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import Any

import boto3
import httpx
from botocore.exceptions import ClientError
from moto.dynamodb.models import dynamodb_backends

from devserver.embedded.client import DirectDynamoDB
from devserver.wiring import BUCKET, REGION, TABLE, Serialized, ensure_table
from shared.clock import Clock
from shared.jobs.context import QueueConfig
from shared.runtime import Runtime
from shared.store import keys

PLAIN_ACCOUNT = "123456789012"  # moto's default: where boto3's calls go
FAST_ACCOUNT = "000000000042"


@dataclass(frozen=True)
class Outcome:
    """A call's answer, or its error as boto3 raised it (class, response); metadata removed."""

    answer: Any = None
    error: tuple[str, Any] | None = None
    exception: BaseException | None = field(default=None, compare=False)

    def unwrap(self) -> Any:
        if self.exception is not None:
            raise self.exception
        return self.answer


def _outcome(call: Any, params: dict[str, Any]) -> Outcome:
    try:
        answer = call(**copy.deepcopy(params))
    except ClientError as exc:
        response = {k: v for k, v in exc.response.items() if k != "ResponseMetadata"}
        return Outcome(error=(type(exc).__name__, response), exception=exc)
    except Exception as exc:  # moto's own failures (a KeyError on an unknown #name) count too
        return Outcome(error=(type(exc).__name__, str(exc)), exception=exc)
    return Outcome(answer={k: v for k, v in answer.items() if k != "ResponseMetadata"})


@dataclass
class Call:
    operation: str
    params: dict[str, Any]
    plain: Outcome
    fast: Outcome


class Tee:
    """A DynamoDB client answering from plain moto, checked against the fast client."""

    # The calls the store, `ensure_table` and the background make.
    CALLS = frozenset(
        {
            "get_item",
            "put_item",
            "update_item",
            "delete_item",
            "query",
            "scan",
            "batch_get_item",
            "batch_write_item",
            "transact_write_items",
            "describe_table",
            "list_tables",
            "create_table",
            "update_time_to_live",
        }
    )
    # Answers that name the account or the creation time differ by construction.
    UNCOMPARED = frozenset({"describe_table", "create_table", "list_tables", "update_time_to_live"})

    def __init__(self, plain: Any, fast: DirectDynamoDB) -> None:
        self.plain = plain
        self.fast = fast
        self.calls: list[Call] = []

    def __getattr__(self, name: str) -> Any:
        if name not in self.CALLS:
            raise AttributeError(name)

        def call(**params: Any) -> Any:
            plain = _outcome(getattr(self.plain, name), params)
            fast = _outcome(getattr(self.fast, name), params)
            if name not in self.UNCOMPARED:
                self.calls.append(Call(name, params, plain, fast))
            return plain.unwrap()

        return call

    def differences(self) -> list[Call]:
        return [c for c in self.calls if c.plain != c.fast]


def stream_records(account: str) -> list[dict[str, Any]]:
    """The table's stream records as stored, without what differs by construction (the
    record's random id, its time, and the size moto counts with that time in it)."""
    shard = dynamodb_backends[account][REGION].tables[TABLE].stream_shard
    out = []
    for record in shard.items:
        data = {
            k: v
            for k, v in record.to_json()["dynamodb"].items()
            if k not in ("ApproximateCreationDateTime", "SizeBytes")
        }
        out.append(
            {k: v for k, v in record.to_json().items() if k not in ("eventID", "dynamodb")}
            | {"dynamodb": data}
        )
    return copy.deepcopy(out)


def tee_runtime(clock: Clock, transport: httpx.AsyncBaseTransport | None = None) -> tuple[Runtime, Tee]:
    """A runtime like `emit dev`'s whose DynamoDB is a Tee (call inside an active moto mock)."""
    plain = boto3.client("dynamodb", region_name=REGION)
    fast = DirectDynamoDB(REGION, account_id=FAST_ACCOUNT)
    ensure_table(plain)
    ensure_table(fast)
    tee = Tee(plain, fast)
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=BUCKET)
    runtime = Runtime(
        clock=clock,
        dynamodb=Serialized(tee, threading.Lock()),
        s3=s3,
        table=TABLE,
        bucket=BUCKET,
        queue_config=QueueConfig(max_wait_ms=60_000),
        settings_cache_ms=0,
        allow_private_callbacks=True,
        unclaimed_every_ms=5_000,
        book_shards=keys.LOCAL_BOOK_SHARDS,
        callback_transport=transport,
    )
    return runtime, tee


def table_items(account: str) -> list[dict[str, Any]]:
    """Every item of the table, in key order, as stored."""
    table = dynamodb_backends[account][REGION].tables[TABLE]
    return [item.to_json()["Attributes"] for item in table.all_items()]
