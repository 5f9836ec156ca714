"""With a large table, garbage collection stays short (devserver.embedded.heap): what the
fast path lets go of is freed by reference counting, and full collections freeze what
survives them."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from moto import mock_aws

from devserver.embedded import heap
from devserver.embedded.client import DirectDynamoDB
from devserver.wiring import REGION, TABLE, ensure_table


@pytest.fixture
def fast() -> Iterator[DirectDynamoDB]:
    with mock_aws():
        client = DirectDynamoDB(REGION)
        ensure_table(client)
        yield client


def test_deleted_items_leave_no_cycles_behind(fast: DirectDynamoDB) -> None:
    """Frozen objects are never collected as cycles: items, their lookups and their stream
    records must need no cycle collector to go. (moto makes a cycle of its own on each put,
    a recursive local function: new, it is collected before it could be frozen.)"""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for i in range(200):
            key = {"pk": {"S": "J#s#1"}, "sk": {"S": f"{i:04d}"}}
            fast.put_item(
                TableName=TABLE,
                Item=key | {"gpk": {"S": "s#n#1"}, "gsk": {"S": f"{i:013d}#x"}, "ttl": {"N": "5"}},
            )
            fast.update_item(
                TableName=TABLE,
                Key=key,
                UpdateExpression="SET #a = :a",
                ExpressionAttributeNames={"#a": "a"},
                ExpressionAttributeValues={":a": {"N": "1"}},
            )
            fast.delete_item(TableName=TABLE, Key=key)
        gc.collect()
        left = {type(o).__name__ for o in gc.garbage}
        assert not left & {"_Row", "Item", "DynamoType", "StreamRecord", "LimitedSizeDict"}, left
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
        gc.enable()


def test_full_collections_freeze_their_survivors() -> None:
    gc.unfreeze()
    heap.keep_collections_short()
    heap.keep_collections_short()  # once only
    try:
        assert gc.callbacks.count(heap._after_collection) == 1
        gc.collect()
        assert gc.get_freeze_count() > 0
    finally:
        gc.callbacks.remove(heap._after_collection)
        gc.unfreeze()
