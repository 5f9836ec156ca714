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

import boto3
from botocore.awsrequest import HeadersDict
from botocore.exceptions import ClientError
from botocore.parsers import create_parser
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionContext
from moto.core.serialize import TimestampSerializer, get_serializer_class
from moto.core.utils import get_service_model
from moto.dynamodbstreams.models import DynamoDBStreamsBackend, dynamodbstreams_backends
from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

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
        model_client = boto3.client(
            "dynamodbstreams", region_name=region, aws_access_key_id="local", aws_secret_access_key="local"
        )
        self._model = model_client.meta.service_model
        self._exceptions = model_client.exceptions
        self._parser = create_parser("json")
        self._handler = DynamoDBStreamsHandler()
        # Its parameters are read from `params` (as moto's newer handlers read them).
        self._handler.automated_parameter_parsing = True
        self._handler.current_account = account_id
        self._handler.region = region

    @property
    def backend(self) -> DynamoDBStreamsBackend:
        return dynamodbstreams_backends[self.account_id][self.region]  # type: ignore[no-any-return]

    def describe_stream(self, **params: Any) -> dict[str, Any]:
        return self._handled("DescribeStream", params)

    def list_streams(self, **params: Any) -> dict[str, Any]:
        return self._handled("ListStreams", params)

    def get_shard_iterator(self, **params: Any) -> dict[str, Any]:
        return self._handled("GetShardIterator", params)

    def get_records(self, *, ShardIterator: str, Limit: int = 1000) -> dict[str, Any]:
        iterators = self.backend.shard_iterators
        iterator = iterators.get(ShardIterator)
        if iterator is None:
            raise self._error("GetRecords", "ExpiredIteratorException", "Iterator expired")
        shard = iterator.stream_shard
        if iterator.sequence_number < shard.starting_sequence_number:
            raise self._error("GetRecords", "TrimmedDataAccessException", "Records were trimmed")
        answer = iterator.get(Limit)
        records = []
        for stored in answer["Records"]:
            data = dict(stored["dynamodb"])
            data["ApproximateCreationDateTime"] = _timestamp(data["ApproximateCreationDateTime"])
            records.append(dict(stored) | {"dynamodb": data})
        if records:
            read = int(records[-1]["dynamodb"]["SequenceNumber"]) + 1 - shard.starting_sequence_number
            if read > 2 * KEEP:
                del shard.items[: read - KEEP]
                shard.starting_sequence_number += read - KEEP
        while len(iterators) > ITERATORS:
            del iterators[next(iter(iterators))]
        return {"NextShardIterator": answer["NextShardIterator"], "Records": records}

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
            response = {
                "status_code": exc.code,
                "headers": HeadersDict(dict(exc.get_headers())),
                "body": exc.get_body().encode(),
            }
            parsed = self._parser.parse(response, self._model.operation_model(operation).output_shape)
            code = parsed.get("Error", {}).get("Code")
            raise self._exceptions.from_code(code)(parsed, operation) from None
        service = get_service_model("dynamodbstreams")
        context = ActionContext(
            service,
            service.operation_model(operation),
            get_serializer_class("dynamodbstreams", "json"),
            handler,
        )
        status, headers, body = result.execute_result(context)
        response = {"status_code": status, "headers": HeadersDict(headers), "body": body.encode()}
        parsed: dict[str, Any] = self._parser.parse(
            response, self._model.operation_model(operation).output_shape
        )
        parsed.pop("ResponseMetadata", None)
        return parsed

    def _error(self, operation: str, code: str, message: str) -> ClientError:
        error_class = self._exceptions.from_code(code)
        return error_class({"Error": {"Code": code, "Message": message}}, operation)  # type: ignore[no-any-return]
