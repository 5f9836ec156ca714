"""Queries answered from the per-partition lookups (devserver.embedded.partitions) give moto's
answers: random writes, then random queries on the table and on its index (every sort key
comparison, limits, start keys, both directions, filters, pages cut at 1 MB), each made on
plain moto and on the fast client through a `Tee`."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from shared.clock import ManualClock
from tests.local.tee import FAST_ACCOUNT, PLAIN_ACCOUNT, Tee, stream_records, table_items, tee_runtime

T = "emit"
PARTITIONS = ["p0", "p1", "p2"]


@pytest.fixture
def tee() -> Iterator[Tee]:
    with mock_aws():
        _, found = tee_runtime(ManualClock())
        yield found


def _sort(rng: random.Random) -> str:
    return f"{rng.randrange(40):03d}#{rng.choice('abc')}"


def _write(tee: Tee, rng: random.Random) -> None:
    pk, sk = rng.choice(PARTITIONS), _sort(rng)
    key = {"pk": {"S": pk}, "sk": {"S": sk}}
    roll = rng.random()
    if roll < 0.55:
        item = dict(key)
        if rng.random() < 0.7:
            item["gpk"] = {"S": rng.choice(["g0", "g1"])}
        if rng.random() < 0.8:
            item["gsk"] = {"S": _sort(rng)}
        item["n"] = {"N": str(rng.randrange(100))}
        if rng.random() < 0.05:
            item["blob"] = {"S": "x" * 300_000}  # pages end at 1 MB
        tee.put_item(TableName=T, Item=item)
    elif roll < 0.85:
        if rng.random() < 0.5:
            tee.update_item(
                TableName=T,
                Key=key,
                UpdateExpression="SET #g = :g, #n = :n",
                ExpressionAttributeNames={"#g": "gsk", "#n": "n"},
                ExpressionAttributeValues={":g": {"S": _sort(rng)}, ":n": {"N": str(rng.randrange(100))}},
            )
        else:
            tee.update_item(
                TableName=T, Key=key, UpdateExpression="REMOVE #g", ExpressionAttributeNames={"#g": "gsk"}
            )
    else:
        tee.delete_item(TableName=T, Key=key)


def _query(tee: Tee, rng: random.Random) -> None:
    on_index = rng.random() < 0.5
    hash_name, range_name = ("gpk", "gsk") if on_index else ("pk", "sk")
    hash_value = rng.choice(["g0", "g1", "g2"] if on_index else [*PARTITIONS, "p9"])
    values: dict[str, Any] = {":h": {"S": hash_value}}
    condition = f"{hash_name} = :h"
    op = rng.choice(["", "=", "<", "<=", ">", ">=", "between", "begins"])
    if op == "between":
        low, high = sorted([_sort(rng), _sort(rng)])
        condition += f" AND {range_name} BETWEEN :a AND :b"
        values |= {":a": {"S": low}, ":b": {"S": high}}
    elif op == "begins":
        condition += f" AND begins_with({range_name}, :a)"
        values[":a"] = {"S": f"{rng.randrange(40):03d}"[: rng.choice([1, 2, 3])]}
    elif op:
        condition += f" AND {range_name} {op} :a"
        values[":a"] = {"S": _sort(rng)}
    params: dict[str, Any] = {
        "TableName": T,
        "KeyConditionExpression": condition,
        "ExpressionAttributeValues": values,
        "ScanIndexForward": rng.random() < 0.5,
    }
    if on_index:
        params["IndexName"] = "ready"
    if rng.random() < 0.6:
        params["Limit"] = rng.choice([1, 2, 3, 5, 10])
    if rng.random() < 0.3:
        params["FilterExpression"] = "n < :cut"
        params["ExpressionAttributeValues"] = values | {":cut": {"N": "50"}}
    # Walk the pages as a client would, each with the previous page's last key.
    for _ in range(30):
        answer = tee.query(**params)
        if "LastEvaluatedKey" not in answer:
            break
        params = params | {"ExclusiveStartKey": answer["LastEvaluatedKey"]}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_queries_from_the_lookups_answer_as_moto(tee: Tee, seed: int) -> None:
    rng = random.Random(seed)
    for step in range(600):
        _write(tee, rng)
        if step % 3 == 0:
            _query(tee, rng)
    different = tee.differences()
    assert not different, "\n".join(
        f"{c.operation}({str(c.params)[:400]})\n  plain: {str(c.plain)[:600]}\n  fast:  {str(c.fast)[:600]}"
        for c in different[:3]
    )
    assert sum(c.operation == "query" for c in tee.calls) > 200
    assert any("ExclusiveStartKey" in c.params and c.params.get("IndexName") for c in tee.calls)
    assert table_items(PLAIN_ACCOUNT) == table_items(FAST_ACCOUNT)
    assert stream_records(PLAIN_ACCOUNT) == stream_records(FAST_ACCOUNT)


def test_the_ttl_lookup_finds_what_a_scan_finds(tee: Tee) -> None:
    rng = random.Random(7)
    for i in range(300):
        item = {"pk": {"S": f"x{i % 7}"}, "sk": {"S": f"{i:04d}"}}
        if rng.random() < 0.7:
            item["ttl"] = {"N": str(rng.randrange(1000))}
        tee.put_item(TableName=T, Item=item)
    for now in (0, 10, 500, 999, 5000):
        scanned, start = [], None
        while True:
            params: dict[str, Any] = {
                "TableName": T,
                "FilterExpression": "#ttl <= :now",
                "ExpressionAttributeNames": {"#ttl": "ttl"},
                "ExpressionAttributeValues": {":now": {"N": str(now)}},
                "ProjectionExpression": "pk, sk",
            }
            if start:
                params["ExclusiveStartKey"] = start
            answer = tee.plain.scan(**params)
            scanned += answer["Items"]
            start = answer.get("LastEvaluatedKey")
            if not start:
                break
        assert tee.fast.expired_keys(TableName=T, Now=now) == scanned
