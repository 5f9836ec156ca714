"""A DynamoDB Streams client for `emit dev`'s stream reader that calls moto's backend directly.

The reader polls ten times a second; through boto3 each poll costs two calls of about 2 ms
each, a few per cent of a core while nothing happens. Here a poll costs microseconds, and
answers are as botocore parses them (record times as aware datetimes).

Two things moto never lets go of are let go of here, as DynamoDB does:
- records: DynamoDB keeps a stream's records for 24 hours; moto keeps every record forever
  (with both images of each write: most of the memory of a long run). Records this client
  has already handed out, older than the last `KEEP` of them, are dropped from the shard
  (its starting sequence number moves up with them, so every later sequence number and
  iterator stays as it was). A reader still before that point gets
  TrimmedDataAccessException, as from DynamoDB.
- shard iterators: moto keeps every iterator it made (one per read); here at most
  `ITERATORS` of the newest are kept, and an older one gets ExpiredIteratorException, as a
  DynamoDB iterator does after 15 minutes.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.exceptions import JsonRESTError
from moto.core.serialize import TimestampSerializer
from moto.dynamodbstreams.models import DynamoDBStreamsBackend, ShardIterator, dynamodbstreams_backends
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

from devserver.embedded import partitions
from devserver.embedded.wire import Wire

KEEP = 1_000
ITERATORS = 1_000
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def _timestamp(value: datetime) -> datetime:
    """A moto datetime (naive, in UTC) as botocore reads it back: epoch seconds to the
    millisecond. botocore gives it in local time (dateutil's tzlocal, slow to build); the
    same instant in UTC is an equal datetime."""
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value
    return datetime.fromtimestamp(TimestampSerializer._timestamp_unixtimestamp(aware), UTC)


class DirectStreams:
    """DescribeStream, GetShardIterator, GetRecords (and ListStreams) on moto's backend."""

    def __init__(self, region: str, account_id: str = DEFAULT_ACCOUNT_ID) -> None:
        self.region = region
        self.account_id = account_id
        self._wire = Wire("dynamodbstreams", region)
        self._made = 0
        self._handler = DynamoDBStreamsHandler()
        # Its parameters are read from `params` (as moto's newer handlers read them).
        self._handler.automated_parameter_parsing = True
        self._handler.current_account = account_id
        self._handler.region = region

    @property
    def backend(self) -> DynamoDBStreamsBackend:
        backend: DynamoDBStreamsBackend = dynamodbstreams_backends[self.account_id][self.region]
        return backend

    def get_shard_iterator(self, **params: Any) -> dict[str, Any]:
        return self._handled("GetShardIterator", params)

    def get_records(self, *, ShardIterator: str, Limit: int = 1000) -> dict[str, Any]:
        iterators = self.backend.shard_iterators
        iterator = iterators.get(ShardIterator)
        if iterator is None:
            raise self._wire.refusal("GetRecords", "ExpiredIteratorException", "Iterator expired")
        shard = iterator.stream_shard
        if iterator.sequence_number < shard.starting_sequence_number:
            raise self._wire.refusal("GetRecords", "TrimmedDataAccessException", "Records were trimmed")
        stored_records = shard.get(iterator.sequence_number, Limit)
        records = []
        for stored in stored_records:
            data = dict(stored["dynamodb"])
            data["ApproximateCreationDateTime"] = _timestamp(data["ApproximateCreationDateTime"])
            records.append(dict(stored) | {"dynamodb": data})
        if records:
            read = int(records[-1]["dynamodb"]["SequenceNumber"]) + 1 - shard.starting_sequence_number
            if read > 2 * KEEP:
                del shard.items[: read - KEEP]
                shard.starting_sequence_number += read - KEEP
        # ShardIterator.get: the next iterator starts after the last record read (or where this
        # one did); moto names each with 472 random bytes, here a counter does.
        if records:
            following = self._iterator(
                iterator, "AFTER_SEQUENCE_NUMBER", int(records[-1]["dynamodb"]["SequenceNumber"])
            )
        else:
            following = self._iterator(iterator, "AT_SEQUENCE_NUMBER", iterator.sequence_number)
        iterators[following.arn] = following
        while len(iterators) > ITERATORS:
            del iterators[next(iter(iterators))]
        return {"NextShardIterator": following.arn, "Records": records}

    def describe_stream(self, **params: Any) -> dict[str, Any]:
        """DynamoDBStreamsBackend.describe_stream's answer as boto3 parses it (the reader asks
        before every read)."""
        if set(params) != {"StreamArn"}:
            return self._handled("DescribeStream", params)
        try:
            stream = self.backend.describe_stream(params["StreamArn"])
        except JsonRESTError as exc:
            raise self._wire.error("DescribeStream", exc) from None
        stream = dict(stream)
        stream["CreationRequestDateTime"] = _timestamp(stream["CreationRequestDateTime"])
        return {"StreamDescription": stream}

    def _iterator(self, previous: ShardIterator, kind: str, sequence: int) -> ShardIterator:
        self._made += 1
        made = partitions.untracked(ShardIterator)
        made.id = f"emit-dev-{self._made}"
        made.streams_backend = previous.streams_backend
        made.stream_shard = previous.stream_shard
        made.shard_iterator_type = kind
        made.sequence_number = sequence + 1 if kind == "AFTER_SEQUENCE_NUMBER" else sequence
        return made

    def _handled(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """moto's handler answers; its answer goes through moto's serializer and botocore's
        parser, as through boto3 (these calls are rare or small)."""
        handler = self._handler
        handler.body = params
        handler.params = params
        handler.uri_match = {}
        try:
            result = getattr(handler, _SNAKE.sub("_", operation).lower())()
        except JsonRESTError as exc:
            raise self._wire.error(operation, exc) from None
        return self._wire.parsed(operation, result, handler)
