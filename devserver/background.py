"""What AWS runs without a request, run in-process by `emit dev`.

- The table's stream, read through the DynamoDB Streams API as Lambda's event source
  mapping reads it, handed in batches to the same stream handler.
- The clock: the same clock handler, ticked every `clock_tick_ms` (`shared.config`: a
  second locally; EventBridge Scheduler ticks it every minute on AWS).
- The callback sender: what the stream and the clock hand over (`shared.outbox`), handed
  in batches to the same sender handler as SQS hands its messages, on threads of its own:
  a space's target that never answers holds up only that space's callbacks.
- DynamoDB TTL, which the embedded DynamoDB does not emulate: items past their `ttl`
  are deleted, and their REMOVE records reach the stream handler as on AWS.
"""

from __future__ import annotations

import base64
import importlib
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from botocore.exceptions import ClientError

from devserver.gateway import LambdaContext
from devserver.wiring import REGION, Serialized
from shared.callbacks import Due
from shared.config import Config
from shared.outbox import LocalOutbox, message
from shared.runtime import Runtime
from shared.store import dynamo

STREAM_POLL_S = 0.02
"""How often the stream is read while it has nothing new: wake's hints ride on it (issue 19),
so a job created for a listening worker is hinted some 10 ms later on average, not 50 (a
read costs microseconds on the embedded DynamoDB: about 1 % of a core more while idle)."""


def handler(function: str) -> Any:
    module: Any = importlib.import_module(f"functions.{function}")
    return module.lambda_handler


class StreamReader:
    """Reads new records from every shard of the table's stream."""

    def __init__(
        self, runtime: Runtime, *, endpoint: str | None = None, from_start: bool = True, client: Any = None
    ) -> None:
        # The embedded fast DynamoDB brings its own Streams client (devserver.embedded.streams).
        streams = getattr(runtime.dynamodb, "streams", None) if endpoint is None else None
        if client is None and streams is not None:
            client = streams()
        if client is None:
            client = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=endpoint)
        # One call at a time with the table's other calls, as with the embedded DynamoDB's.
        lock = getattr(runtime.dynamodb, "lock", None)
        self.client: Any = Serialized(client, lock) if lock is not None else client
        self.arn = runtime.dynamodb.describe_table(TableName=runtime.table)["Table"]["LatestStreamArn"]
        self.from_start = from_start
        self.iterators: dict[str, str | None] = {}
        self.last_sequence: dict[str, str] = {}

    def _discover(self) -> None:
        shards = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"].get("Shards", [])
        for shard in shards:
            shard_id = shard["ShardId"]
            if shard_id in self.iterators:
                continue
            # Shards that existed when reading began start at their end unless asked;
            # shards that appear later are read from their start.
            kind = "TRIM_HORIZON" if self.from_start or self.iterators else "LATEST"
            self.iterators[shard_id] = self.client.get_shard_iterator(
                StreamArn=self.arn, ShardId=shard_id, ShardIteratorType=kind
            )["ShardIterator"]
        self.from_start = True

    def read(self) -> list[dict[str, Any]]:
        """The records that arrived since the last read, in order per shard."""
        self._discover()
        records: list[dict[str, Any]] = []
        for shard_id, iterator in list(self.iterators.items()):
            if iterator is None:
                continue
            try:
                answer = self.client.get_records(ShardIterator=iterator, Limit=1000)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ExpiredIteratorException":
                    raise
                answer = self._resume(shard_id)
            self.iterators[shard_id] = answer.get("NextShardIterator")
            for record in answer.get("Records", []):
                self.last_sequence[shard_id] = record["dynamodb"]["SequenceNumber"]
                records.append(as_lambda_record(record, self.arn))
        return records

    def _resume(self, shard_id: str) -> Any:
        params: dict[str, Any] = {"StreamArn": self.arn, "ShardId": shard_id}
        if shard_id in self.last_sequence:
            params |= {
                "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
                "SequenceNumber": self.last_sequence[shard_id],
            }
        else:
            params["ShardIteratorType"] = "TRIM_HORIZON"
        iterator = self.client.get_shard_iterator(**params)["ShardIterator"]
        return self.client.get_records(ShardIterator=iterator, Limit=1000)


EVENT_NAMES = ("INSERT", "MODIFY", "REMOVE")


def as_lambda_record(record: dict[str, Any], arn: str) -> dict[str, Any]:
    """A GetRecords record as Lambda's event source mapping hands it over: a JSON event,
    so its time is a number and its binary values (`B`, `BS`) base64 text, not bytes."""
    out = dict(record)
    data = dict(out.get("dynamodb", {}))
    if out.get("eventName") not in EVENT_NAMES and "OldImage" in data and "NewImage" not in data:
        # DynamoDB Local names its TTL deletions' records UNKNOWN_TO_SDK_VERSION; Lambda's
        # events name every deletion REMOVE.
        out["eventName"] = "REMOVE"
    created = data.get("ApproximateCreationDateTime")
    if created is not None and not isinstance(created, int | float):
        data["ApproximateCreationDateTime"] = created.timestamp()
    for image in ("Keys", "NewImage", "OldImage"):
        if image in data:
            data[image] = {name: _as_json(value) for name, value in data[image].items()}
    out["dynamodb"] = data
    out["eventSourceARN"] = arn
    return out


def _as_json(value: dict[str, Any]) -> dict[str, Any]:
    """One attribute value as JSON carries it: bytes in base64."""
    if isinstance(value.get("B"), bytes):
        return {"B": base64.b64encode(value["B"]).decode()}
    if "BS" in value:
        return {"BS": [base64.b64encode(v).decode() if isinstance(v, bytes) else v for v in value["BS"]]}
    if "M" in value:
        return {"M": {k: _as_json(v) for k, v in value["M"].items()}}
    if "L" in value:
        return {"L": [_as_json(v) for v in value["L"]]}
    return value


def deliver(records: list[dict[str, Any]], *, batch_size: int = 100, attempts: int = 3) -> None:
    """Hand records to the stream handler in batches; a batch's failed tail is retried,
    then dropped with a message (Lambda would send it to the dead-letter queue)."""
    stream_handler = handler("stream_handler")
    for start in range(0, len(records), batch_size):
        batch = records[start : start + batch_size]
        for _ in range(attempts):
            try:
                answer = stream_handler({"Records": batch}, LambdaContext("stream_handler", 300, 512))
            except BatchProcessingError:
                # Every record failed (Powertools then raises): Lambda retries the whole batch.
                answer = {
                    "batchItemFailures": [{"itemIdentifier": r["dynamodb"]["SequenceNumber"]} for r in batch]
                }
            failed = {f["itemIdentifier"] for f in (answer or {}).get("batchItemFailures", [])}
            if not failed:
                break
            first = next(i for i, r in enumerate(batch) if r["dynamodb"]["SequenceNumber"] in failed)
            batch = batch[first:]
        else:
            print(f"emit dev: {len(batch)} stream records kept failing; dropped", file=sys.stderr)


def tick(tick_ms: int) -> dict[str, Any]:
    event = {"id": str(uuid.uuid4()), "source": "emit.dev.clock", "tickMs": tick_ms}
    return handler("clock_handler")(event, LambdaContext("clock_handler", 60, 256))


def send(batch: list[Due]) -> None:
    """Hand one batch of deliveries to the callback sender, as SQS would hand its messages.
    What fails is dropped with a message: its delivery is still due, and the clock hands
    it over again (after the hold of an attempt that was taken runs out)."""
    records = [
        {"messageId": str(uuid.uuid4()), "body": message(due), "attributes": {}, "eventSource": "aws:sqs"}
        for due in batch
    ]
    try:
        answer = handler("callback_sender")({"Records": records}, LambdaContext("callback_sender", 30, 256))
    except BatchProcessingError:
        answer = {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records]}
    failed = len((answer or {}).get("batchItemFailures", []))
    if failed:
        print(f"emit dev: {failed} callbacks could not be tried; the clock tries them again", file=sys.stderr)


class Sender:
    """emit dev's callback sender: batches of what the stream and the clock handed over,
    each space's at most `LocalOutbox.per_space` in flight, each batch on a thread of its
    own (`start`), so another space's callbacks start at once; or, by hand (`drain`, the
    tests), everything handed over, in the caller's thread, until nothing is left."""

    def __init__(self, outbox: LocalOutbox) -> None:
        self.outbox = outbox
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="emit-callbacks", daemon=True)

    def drain(self) -> None:
        while batches := self.outbox.take():
            for batch in batches:
                try:
                    send(batch)
                finally:
                    self.outbox.done(batch)

    def start(self) -> None:
        self.outbox.on_submit = self._wake.set
        self._thread.start()

    def stop(self) -> None:
        self.outbox.on_submit = None
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            for batch in self.outbox.take():
                threading.Thread(
                    target=self._send, args=(batch,), name="emit-callback-send", daemon=True
                ).start()

    def _send(self, batch: list[Due]) -> None:
        try:
            send(batch)
        except Exception as exc:  # as Lambda would: the clock hands it over again
            print(f"emit dev: callbacks: {exc!r}", file=sys.stderr)
        finally:
            self.outbox.done(batch)
            self._wake.set()  # the space has room again


def expire_ttl(runtime: Runtime) -> int:
    """Delete items past their `ttl`, as DynamoDB's TTL would (days late on AWS; at once here)."""
    now_s = runtime.clock.now_ms() // 1000
    expired: list[dict[str, Any]] = []
    # The embedded fast DynamoDB keeps its items in TTL order: no scan of the whole table.
    finder = getattr(runtime.dynamodb, "expired_keys", None)
    if finder is not None:
        expired = [dynamo.deserialize(k) for k in finder(TableName=runtime.table, Now=now_s)]
        runtime.db.batch_delete(expired)
        return len(expired)
    start = None
    while True:
        params: dict[str, Any] = {
            "TableName": runtime.table,
            "FilterExpression": "#ttl <= :now",
            "ExpressionAttributeNames": {"#ttl": "ttl"},
            "ExpressionAttributeValues": dynamo.values({":now": now_s}),
            "ProjectionExpression": "pk, sk",
        }
        if start:
            params["ExclusiveStartKey"] = start
        answer = runtime.dynamodb.scan(**params)
        expired += [dynamo.deserialize(i) for i in answer.get("Items", [])]
        start = answer.get("LastEvaluatedKey")
        if not start:
            break
    runtime.db.batch_delete(expired)
    return len(expired)


class Background:
    """What AWS runs without a request, run here: `start` runs the stream, the clock, TTL
    and the callback sender each on daemon threads until `stop` (`emit dev`); the tests
    leave it stopped and drive each step by hand (`stream`, `tick`, `expire_ttl`) against
    a clock of their own, each step ending once the callbacks it handed over are sent."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        endpoint: str | None = None,
        tick_s: float | None = None,
        streams_client: Any = None,
    ) -> None:
        self.runtime = runtime
        # A table that outlives the process (an endpoint) has a stream history: start at its end.
        self.reader = StreamReader(
            runtime, endpoint=endpoint, from_start=endpoint is None, client=streams_client
        )
        self.tick_s = runtime.config.clock_tick_ms / 1000 if tick_s is None else tick_s
        outbox = runtime.outbox
        assert isinstance(outbox, LocalOutbox), "the callback sender runs here only with a local outbox"
        self.sender = Sender(outbox)
        self._stop = threading.Event()
        self._poke = threading.Event()
        self._ticked = threading.Condition()
        self._ticks = 0
        """Ticks of the clock's thread ended (`tick_now` waits on it)."""
        self._ticking = False
        self._threads = [
            threading.Thread(
                target=self._loop, args=(self._stream, STREAM_POLL_S), name="emit-stream", daemon=True
            ),
            threading.Thread(target=self._clock_loop, name="emit-clock", daemon=True),
            threading.Thread(target=self._loop, args=(self._ttl, 5.0), name="emit-ttl", daemon=True),
        ]

    # -- by hand --------------------------------------------------------------------------

    def records(self) -> list[dict[str, Any]]:
        """Stream records written since the last call (not yet handed to the handler)."""
        return self.reader.read()

    def stream(self, records: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Hand records (by default the new ones) to the stream handler, as Lambda would,
        then send the callbacks it handed over."""
        records = self.records() if records is None else records
        if records:
            deliver(records)
        self.sender.drain()
        return records

    def tick(self, tick_ms: int = Config.default("clock_tick_ms")) -> dict[str, Any]:
        """The stream's new records first, then one tick of the clock handler (by default
        one of AWS's, a minute apart), then the callbacks it handed over."""
        self.stream()
        answer = tick(tick_ms)
        self.sender.drain()
        return answer

    def expire_ttl(self) -> int:
        return expire_ttl(self.runtime)

    # -- on threads -----------------------------------------------------------------------

    def start(self) -> None:
        self.sender.start()
        for thread in self._threads:
            thread.start()

    def tick_now(self, timeout: float = 30.0) -> bool:
        """Have the clock's thread tick at once (not waiting out its interval), and wait until
        a tick begun after this call has ended (`emit dev --test-clock`: once the time is
        moved, what came due is done before the answer); False if not within `timeout`."""
        with self._ticked:
            target = self._ticks + (2 if self._ticking else 1)
            self._poke.set()
            return self._ticked.wait_for(lambda: self._ticks >= target or self._stop.is_set(), timeout)

    def stop(self) -> None:
        self._stop.set()
        self._poke.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self.sender.stop()

    def _loop(self, step: Callable[[], bool], every_s: float) -> None:
        while not self._stop.is_set():
            try:
                busy = step()
            except Exception as exc:  # keep the loop alive, as Lambda would retry the next time
                print(f"emit dev: {threading.current_thread().name}: {exc!r}", file=sys.stderr)
                busy = False
            if not busy:
                self._stop.wait(every_s)

    def _stream(self) -> bool:
        records = self.records()
        if records:
            deliver(records)  # its callbacks go to the sender's threads: no waiting for them here
        return bool(records)

    def _clock_loop(self) -> None:
        """A tick every `tick_s`, or at once when poked; each counted once it has ended."""
        while not self._stop.is_set():
            with self._ticked:
                self._ticking = True
                self._poke.clear()
            try:
                tick(int(self.tick_s * 1000))
            except Exception as exc:  # as in `_loop`: the next tick tries again
                print(f"emit dev: emit-clock: {exc!r}", file=sys.stderr)
            with self._ticked:
                self._ticking = False
                self._ticks += 1
                self._ticked.notify_all()
            self._poke.wait(self.tick_s)

    def _ttl(self) -> bool:
        expire_ttl(self.runtime)
        return False
