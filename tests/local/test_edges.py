"""Requests the store never makes still answer on the fast client as on plain moto: the fast
path either does what moto does or leaves the request to moto's own handler.

Each request goes through a `Tee` (plain moto through boto3, and the fast client); answers,
errors (code, message, modeled fields) and stream records must be the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from shared.clock import ManualClock
from tests.local.tee import FAST_ACCOUNT, PLAIN_ACCOUNT, Tee, stream_records, tee_runtime

T = "emit"


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


@pytest.fixture
def tee() -> Iterator[Tee]:
    with mock_aws():
        _, found = tee_runtime(ManualClock())
        yield found


ODD: list[tuple[str, dict[str, Any]]] = [
    # puts
    ("put_item", {"TableName": T, "Item": key("a", "1") | {"n": {"N": "1.50"}, "b": {"B": b"\x00"}}}),
    ("put_item", {"TableName": T, "Item": key("a", "1"), "ReturnValues": "ALL_OLD"}),
    ("put_item", {"TableName": T, "Item": key("a", "")}),
    ("put_item", {"TableName": T, "Item": {"pk": {"S": "a"}}}),
    ("put_item", {"TableName": T, "Item": key("a", "2") | {"gsk": {"N": "1"}}}),
    ("put_item", {"TableName": T, "Item": key("a", "3") | {"big": {"S": "x" * 410_000}}}),
    ("put_item", {"TableName": T, "Item": key("a", "4") | {"s": {"SS": ["x", "y"]}, "e": {"S": ""}}}),
    ("put_item", {"TableName": T, "Item": key("a", "5") | {"n": {"N": "1e3"}}}),
    (
        "put_item",
        {
            "TableName": T,
            "Item": key("a", "1"),
            "ConditionExpression": "#x = :v",
            "ExpressionAttributeValues": {":v": {"N": "1"}},
        },
    ),
    (
        "put_item",
        {
            "TableName": T,
            "Item": key("a", "1"),
            "ConditionExpression": "n = :v",
            "ExpressionAttributeNames": {"#unused": "x"},
            "ExpressionAttributeValues": {":v": {"N": "1.5"}},
        },
    ),
    (
        "put_item",
        {
            "TableName": T,
            "Item": key("a", "1") | {"n": {"N": "2"}},
            "ConditionExpression": "n BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {":lo": {"N": "1"}, ":hi": {"N": "3"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    ("put_item", {"TableName": "nope", "Item": key("a", "1")}),
    # updates
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET pk = :v",
            "ExpressionAttributeValues": {":v": {"S": "z"}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET #a = :v, #a = :w",
            "ExpressionAttributeNames": {"#a": "a"},
            "ExpressionAttributeValues": {":v": {"S": "1"}, ":w": {"S": "2"}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET a = :v",
            "ExpressionAttributeValues": {":v": {"S": "1"}, ":extra": {"S": "2"}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET a = :v",
            "ExpressionAttributeValues": {},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET #s = :v",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":v": {"S": "x"}},
            "ReturnValues": "UPDATED_OLD",
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "ADD c :n",
            "ExpressionAttributeValues": {":n": {"N": "2"}},
            "ReturnValues": "ALL_NEW",
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "ADD #s :n",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":n": {"N": "2"}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET gsk = :v",
            "ExpressionAttributeValues": {":v": {"S": ""}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET gsk = :v",
            "ExpressionAttributeValues": {":v": {"N": "3"}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET m.x = :v",
            "ExpressionAttributeValues": {":v": {"S": "3"}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET m = :v REMOVE c",
            "ExpressionAttributeValues": {":v": {"M": {"x": {"L": [{"N": "1"}, {"NULL": True}]}}}},
            "ReturnValues": "ALL_NEW",
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET c = c + :n",
            "ExpressionAttributeValues": {":n": {"N": "2"}},
        },
    ),
    (
        "update_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "UpdateExpression": "SET a = :v",
            "ConditionExpression": "attribute_exists(nope)",
            "ExpressionAttributeValues": {":v": {"S": "1"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    (
        "update_item",
        {"TableName": T, "Key": key("new", "1"), "UpdateExpression": "REMOVE a", "ReturnValues": "ALL_NEW"},
    ),
    ("update_item", {"TableName": T, "Key": {"pk": {"S": "u"}}, "UpdateExpression": "REMOVE a"}),
    (
        "update_item",
        {"TableName": T, "Key": key("u", "1") | {"x": {"S": "1"}}, "UpdateExpression": "REMOVE a"},
    ),
    # deletes
    (
        "delete_item",
        {
            "TableName": T,
            "Key": key("u", "1"),
            "ConditionExpression": "a = :v",
            "ExpressionAttributeValues": {":v": {"S": "no"}},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    ("delete_item", {"TableName": T, "Key": key("u", "1"), "ReturnValues": "ALL_OLD"}),
    ("delete_item", {"TableName": T, "Key": key("gone", "1")}),
    # batches
    (
        "batch_write_item",
        {
            "RequestItems": {
                T: [{"PutRequest": {"Item": key("b", "1")}}, {"PutRequest": {"Item": key("b", "1")}}]
            }
        },
    ),
    (
        "batch_write_item",
        {
            "RequestItems": {
                T: [
                    {"PutRequest": {"Item": key("b", "2")}},
                    {"PutRequest": {"Item": key("b", "3") | {"n": {"N": "x"}}}},
                ]
            }
        },
    ),
    (
        "batch_write_item",
        {
            "RequestItems": {
                T: [{"PutRequest": {"Item": key("b", "4")}}, {"DeleteRequest": {"Key": key("b", "2")}}]
            }
        },
    ),
    ("batch_write_item", {"RequestItems": {T: [{"DeleteRequest": {"Key": {"pk": {"S": "b"}}}}]}}),
    # transactions
    (
        "transact_write_items",
        {
            "TransactItems": [
                {"Put": {"TableName": T, "Item": key("t", "1")}},
                {"Delete": {"TableName": T, "Key": key("t", "1")}},
            ]
        },
    ),
    (
        "transact_write_items",
        {
            "TransactItems": [
                {"Put": {"TableName": T, "Item": key("t", "2")}},
                {
                    "ConditionCheck": {
                        "TableName": T,
                        "Key": key("t", "3"),
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
                {"Delete": {"TableName": T, "Key": key("b", "4")}},
            ]
        },
    ),
    (
        "transact_write_items",
        {
            "TransactItems": [
                {"Put": {"TableName": T, "Item": key("t", "4") | {"big": {"S": "x" * 410_000}}}},
                {"Put": {"TableName": T, "Item": key("t", "5")}},
            ]
        },
    ),
    (
        "transact_write_items",
        {
            "TransactItems": [
                {
                    "Update": {
                        "TableName": T,
                        "Key": key("t", "6"),
                        "UpdateExpression": "SET a = :v",
                        "ExpressionAttributeValues": {":v": {"S": "1"}},
                    }
                },
                {
                    "Delete": {
                        "TableName": T,
                        "Key": key("b", "4"),
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
            ]
        },
    ),
    (
        "transact_write_items",
        {
            "TransactItems": [
                {
                    "Put": {
                        "TableName": T,
                        "Item": key("t", "7"),
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ExpressionAttributeValues": {},
                    }
                }
            ]
        },
    ),
    # reads
    ("get_item", {"TableName": T, "Key": key("u", "1"), "ProjectionExpression": "m.x, a"}),
    ("get_item", {"TableName": T, "Key": {"pk": {"S": "u"}}}),
    ("get_item", {"TableName": T, "Key": key("", "1")}),
    ("get_item", {"TableName": T, "Key": key("u", "1"), "ReturnConsumedCapacity": "TOTAL"}),
    ("get_item", {"TableName": T, "Key": key("u", "1"), "ConsistentRead": True}),
    ("get_item", {"TableName": "nope", "Key": key("u", "1")}),
    ("batch_get_item", {"RequestItems": {T: {"Keys": [key("u", "1"), key("u", "1")]}}}),
    (
        "query",
        {
            "TableName": T,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": "u"}},
            "Select": "COUNT",
        },
    ),
    (
        "query",
        {
            "TableName": T,
            "IndexName": "ready",
            "KeyConditionExpression": "gpk = :p",
            "ExpressionAttributeValues": {":p": {"S": "u"}},
            "ConsistentRead": True,
        },
    ),
    (
        "query",
        {
            "TableName": T,
            "IndexName": "nope",
            "KeyConditionExpression": "gpk = :p",
            "ExpressionAttributeValues": {":p": {"S": "u"}},
        },
    ),
    (
        "query",
        {
            "TableName": T,
            "KeyConditionExpression": "pk = :p AND sk > :s",
            "ExpressionAttributeValues": {":p": {"S": "u"}, ":s": {"N": "1"}},
        },
    ),
    ("scan", {"TableName": T, "Limit": 3}),
]


def test_odd_requests_answer_the_same(tee: Tee) -> None:
    for operation, params in ODD:
        _call(tee, operation, params)
    different = tee.differences()
    assert not different, "\n".join(
        f"{c.operation}({str(c.params)[:300]})\n  plain: {c.plain}\n  fast:  {c.fast}" for c in different[:5]
    )
    assert stream_records(PLAIN_ACCOUNT) == stream_records(FAST_ACCOUNT)
    assert len(tee.calls) == len(ODD)


def _call(tee: Tee, operation: str, params: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):  # both sides' errors are compared by the tee
        getattr(tee, operation)(**params)
