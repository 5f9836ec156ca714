"""The direct Streams client of `emit dev` (devserver.embedded.streams): the records boto3
reads, and a shard that lets go of what was read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from devserver.embedded import streams
from devserver.embedded.client import DirectDynamoDB
from devserver.wiring import REGION, TABLE, ensure_table


@pytest.fixture
def fast() -> Iterator[DirectDynamoDB]:
    with mock_aws():
        client = DirectDynamoDB(REGION)  # boto3's account: both read the same stream
        ensure_table(client)
        yield client


def _write(client: DirectDynamoDB, first: int, count: int) -> None:
    for i in range(first, first + count):
        client.put_item(
            TableName=TABLE, Item={"pk": {"S": "p"}, "sk": {"S": f"{i:06d}"}, "b": {"B": b"\x01"}}
        )


def _iterator(client: Any, arn: str, kind: str, **more: Any) -> str:
    shard = client.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    return str(
        client.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType=kind, **more)[
            "ShardIterator"
        ]
    )


def test_records_are_the_ones_boto3_reads(fast: DirectDynamoDB) -> None:
    _write(fast, 0, 30)
    fast.delete_item(TableName=TABLE, Key={"pk": {"S": "p"}, "sk": {"S": "000003"}})
    arn = fast.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    plain, direct = boto3.client("dynamodbstreams", region_name=REGION), fast.streams()
    expected = plain.get_records(ShardIterator=_iterator(plain, arn, "TRIM_HORIZON"), Limit=1000)
    got = direct.get_records(ShardIterator=_iterator(direct, arn, "TRIM_HORIZON"), Limit=1000)
    assert got["Records"] == expected["Records"] and len(got["Records"]) == 31
    described = plain.describe_stream(StreamArn=arn)
    described.pop("ResponseMetadata")
    assert direct.describe_stream(StreamArn=arn) == described


def test_read_records_are_let_go_and_sequence_numbers_go_on(fast: DirectDynamoDB) -> None:
    arn = fast.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    direct = fast.streams()
    shard = fast.backend.tables[TABLE].stream_shard
    start = _iterator(direct, arn, "TRIM_HORIZON")
    iterator, seen = start, []
    for batch in range(6):
        _write(fast, batch * 1000, 1000)
        answer = direct.get_records(ShardIterator=iterator, Limit=1000)
        seen += [int(r["dynamodb"]["SequenceNumber"]) for r in answer["Records"]]
        iterator = answer["NextShardIterator"]
    assert seen == list(range(seen[0], seen[0] + 6000)), "every record once, in order"
    assert len(shard.items) <= 2 * streams.KEEP, "read records were let go"
    with pytest.raises(ClientError) as trimmed:
        direct.get_records(ShardIterator=start)
    assert trimmed.value.response["Error"]["Code"] == "TrimmedDataAccessException"
    _write(fast, 9000, 3)
    later = direct.get_records(ShardIterator=iterator)["Records"]
    assert [int(r["dynamodb"]["SequenceNumber"]) for r in later] == [seen[-1] + 1, seen[-1] + 2, seen[-1] + 3]
    horizon = direct.get_records(ShardIterator=_iterator(direct, arn, "TRIM_HORIZON"), Limit=1000)["Records"]
    assert int(horizon[0]["dynamodb"]["SequenceNumber"]) == shard.starting_sequence_number
    assert direct.get_records(ShardIterator=_iterator(direct, arn, "LATEST"))["Records"] == []


def test_old_iterators_expire_instead_of_piling_up(fast: DirectDynamoDB) -> None:
    arn = fast.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    direct = fast.streams()
    first = iterator = _iterator(direct, arn, "LATEST")
    for _ in range(streams.ITERATORS + 10):
        iterator = direct.get_records(ShardIterator=iterator)["NextShardIterator"]
    assert len(direct.backend.shard_iterators) <= streams.ITERATORS
    with pytest.raises(ClientError) as expired:
        direct.get_records(ShardIterator=first)
    assert expired.value.response["Error"]["Code"] == "ExpiredIteratorException"
