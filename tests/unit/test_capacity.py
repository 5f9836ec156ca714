"""Tests for bench.capacity: AWS's worked examples, then the meter under moto.

The worked examples are quoted from
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
(RW), https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html (GSI),
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html (TX)
and the pre-2023 edition of the capacity page,
https://github.com/awsdocs/amazon-dynamodb-developer-guide/blob/master/doc_source/CapacityUnitCalculations.md
(OLD). The item-size page (CapacityUnitCalculations.html) gives rules but no
worked numbers, so its tests apply the rules by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from bench.capacity import (
    CapacityMeter,
    IndexSpec,
    TableSpec,
    attribute_value_size,
    index_entry,
    index_write_units,
    item_size,
    item_write_units,
    read_units,
    write_units,
)

KB = 1024


def blob(name: str, size: int, **extra: str) -> dict[str, Any]:
    """An item of exactly ``size`` bytes: string attributes only, ASCII only.

    Sized by hand (name bytes + value bytes), independently of item_size.
    """
    item = {"pk": {"S": name}, **{key: {"S": value} for key, value in extra.items()}}
    fixed = sum(len(key) + len(value["S"]) for key, value in item.items())
    padding = size - fixed - len("payload")
    assert padding >= 0, f"{size} bytes is too small for {item}"
    item["payload"] = {"S": "x" * padding}
    return item


# ---------------------------------------------------------------------------
# Item sizes (rules of CapacityUnitCalculations.html, applied by hand)
# ---------------------------------------------------------------------------


def test_string_size_is_its_utf8_bytes() -> None:
    assert attribute_value_size({"S": "hello"}) == 5
    assert attribute_value_size({"S": "héllo"}) == 6  # é is 2 bytes in UTF-8
    assert attribute_value_size({"S": ""}) == 0


@pytest.mark.parametrize(
    ("number", "size"),
    [
        ("7", 2),  # 1 significant digit -> 1 byte + 1
        ("12", 2),  # 2 digits -> 1 byte + 1
        ("123", 3),  # 3 digits -> 2 bytes + 1
        ("100", 2),  # "Leading and trailing zeroes are trimmed": 1 digit
        ("0.00123", 3),  # 3 significant digits
        ("-12345", 4),  # sign is not a digit: 5 digits -> 3 bytes + 1
        ("0", 1),  # no significant digit left
        ("12345678901234567890123456789012345678", 20),  # 38 digits -> 19 + 1
    ],
)
def test_number_size_is_one_byte_per_two_significant_digits_plus_one(number: str, size: int) -> None:
    assert attribute_value_size({"N": number}) == size


def test_binary_null_bool_sizes() -> None:
    assert attribute_value_size({"B": b"\x00\x01\x02"}) == 3  # raw bytes, not base64
    assert attribute_value_size({"NULL": True}) == 1
    assert attribute_value_size({"BOOL": False}) == 1


def test_list_and_map_have_3_bytes_overhead_and_1_per_element() -> None:
    assert attribute_value_size({"L": []}) == 3
    assert attribute_value_size({"M": {}}) == 3
    # 3 + ("ab" 2 + 1) + ("1" 2 + 1)
    assert attribute_value_size({"L": [{"S": "ab"}, {"N": "1"}]}) == 9
    # 3 + (key "a" 1 + "xy" 2 + 1)
    assert attribute_value_size({"M": {"a": {"S": "xy"}}}) == 7
    # nested: 3 + (key "m" 1 + inner map 7 + 1)
    assert attribute_value_size({"M": {"m": {"M": {"a": {"S": "xy"}}}}}) == 12


def test_sets_are_the_sum_of_their_members() -> None:
    assert attribute_value_size({"SS": ["a", "bc"]}) == 3
    assert attribute_value_size({"NS": ["1", "123"]}) == 2 + 3
    assert attribute_value_size({"BS": [b"ab", b"c"]}) == 3


def test_item_size_adds_attribute_names() -> None:
    item = {"pk": {"S": "job-1"}, "n": {"N": "42"}, "ok": {"BOOL": True}}
    assert item_size(item) == (2 + 5) + (1 + 2) + (2 + 1)
    assert item_size({}) == 0


def test_unknown_type_tag_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown"):
        attribute_value_size({"X": "1"})


# ---------------------------------------------------------------------------
# Read units: AWS's worked examples
# ---------------------------------------------------------------------------


def test_rw_3500_byte_read_costs_as_much_as_4_kb() -> None:
    # RW: "reading a 3,500-byte item consumes the same throughput as reading a 4 KB item."
    assert read_units(3500, consistent=True) == read_units(4 * KB, consistent=True) == 1


def test_rw_8_kb_item_strong_eventual_transactional() -> None:
    # RW: "if your item size is 8 KB, you require 2 read units to sustain one
    # strongly consistent read. You'll require 1 read unit if you choose eventually
    # consistent reads or 4 read units for a transactional read request."
    assert read_units(8 * KB, consistent=True) == 2
    assert read_units(8 * KB, consistent=False) == 1
    assert 2 * read_units(8 * KB, consistent=True) == 4


def test_rw_getitem_rounds_3_5_kb_to_4_and_10_kb_to_12() -> None:
    # RW: "if you read an item that is 3.5 KB, DynamoDB rounds the item size to
    # 4 KB. If you read an item of 10 KB, DynamoDB rounds the item size to 12 KB."
    assert read_units(int(3.5 * KB), consistent=True) == 1
    assert read_units(10 * KB, consistent=True) == 3
    assert read_units(10 * KB, consistent=False) == 1.5  # eventual: "divide this number by two"


def test_rw_batchgetitem_rounds_each_item() -> None:
    # RW: "if BatchGetItem reads two items of sizes 1.5 KB and 6.5 KB, DynamoDB
    # calculates the size as 12 KB (4 KB + 8 KB)", not 8 KB.
    per_item = read_units(int(1.5 * KB), consistent=True) + read_units(int(6.5 * KB), consistent=True)
    assert per_item == 3
    assert read_units(int(1.5 * KB) + int(6.5 * KB), consistent=True) == 2  # what summing would give


def test_rw_query_rounds_the_total_once() -> None:
    # RW: "suppose your query returns 10 items whose combined size is 40.8 KB.
    # DynamoDB rounds the item size for the operation to 44 KB."
    assert read_units(int(40.8 * KB), consistent=True) == 11
    # RW: "If a query returns 1500 items of 64 bytes each, the cumulative size is 96 KB."
    # That "KB" is decimal: 1500 x 64 = 96,000 bytes = 93.75 KiB, which rounds up
    # to 96 KiB = 24 units of 4 KiB all the same.
    assert 1500 * 64 == 96_000
    assert read_units(1500 * 64, consistent=True) == 24
    assert read_units(1500 * 64, consistent=False) == 12


def test_old_eventually_consistent_80_kb_is_10_units() -> None:
    # OLD: "For an eventually consistent read, if total item size is 80 KB, the
    # operation consumes only 10 capacity units."
    assert read_units(80 * KB, consistent=False) == 10


def test_gsi_query_of_eight_2000_byte_entries_is_2_units() -> None:
    # GSI: "The total size of the matching items is 2,000 bytes x 8 items = 16,000
    # bytes. This result is then rounded up to the nearest 4 KB boundary. Because
    # global secondary index queries are eventually consistent, the total cost is
    # 0.5 x (16 KB / 4 KB), or 2 read capacity units."
    assert read_units(8 * 2000, consistent=False) == 2


def test_reading_nothing_still_costs_the_minimum() -> None:
    # RW: "If you perform a read operation on an item that doesn't exist, DynamoDB
    # will still consume read throughput"; OLD: "A strongly consistent read request
    # consumes one read capacity unit, while an eventually consistent read request
    # consumes 0.5 of a read capacity unit."
    assert read_units(0, consistent=True) == 1
    assert read_units(0, consistent=False) == 0.5


# ---------------------------------------------------------------------------
# Write units: AWS's worked examples
# ---------------------------------------------------------------------------


def test_rw_500_byte_write_is_1_unit_and_2_kb_is_2() -> None:
    # RW: "writing a 500-byte item consumes the same throughput as writing a 1 KB item."
    assert write_units(500) == write_units(KB) == 1
    # RW: "if your item size is 2 KB, you require 2 write units to sustain one
    # write request or 4 write units for a transactional write request."
    assert write_units(2 * KB) == 2
    assert 2 * write_units(2 * KB) == 4
    assert write_units(2 * KB + 1) == 3


def test_rw_1_6_kb_put_or_delete_rounds_to_2_kb() -> None:
    # RW: "if you put or delete an item of 1.6 KB, DynamoDB rounds the item size up to 2 KB."
    item = blob("a", int(1.6 * KB))
    assert item_write_units(None, item) == 2
    assert item_write_units(item, None) == 2


def test_rw_batchwriteitem_rounds_each_item() -> None:
    # RW: "if BatchWriteItem writes two items of sizes 500-byte and 3.5 KB, DynamoDB
    # calculates the size as 5 KB (1 KB + 4 KB)", not 4 KB.
    assert write_units(500) + write_units(int(3.5 * KB)) == 5
    assert write_units(500 + int(3.5 * KB)) == 4  # what summing would give


def test_rw_update_costs_the_larger_of_before_and_after() -> None:
    # RW: "UpdateItem will still consume the full amount of provisioned throughput
    # (the larger of the "before" and "after" item sizes)."
    before, after = blob("a", 3000), blob("a", 900)
    assert item_write_units(before, after) == 3
    assert item_write_units(after, before) == 3


def test_rw_failed_condition_uses_larger_of_existing_and_new() -> None:
    # RW: "say that an existing item is 300 KB. The new item you're trying to
    # create or update is 310 KB. The write capacity units consumed will be 310 KB
    # for the new item."
    assert item_write_units(blob("a", 300 * KB), blob("a", 310 * KB)) == 310


def test_old_failed_condition_on_1_and_2_kb_items_and_missing_item() -> None:
    # OLD: "a failed conditional write of a 1 KB item would consume one write
    # capacity unit; if the item were twice that size, the failed conditional write
    # would consume two write capacity units." "If the item does not exist,
    # DynamoDB will consume one write capacity unit."
    assert item_write_units(blob("a", KB), None) == 1
    assert item_write_units(blob("a", 2 * KB), None) == 2
    assert item_write_units(None, None) == 1


def test_tx_three_500_byte_items_need_6_units() -> None:
    # TX: "each transaction writes three 500-byte items in your table. Each item
    # requires two write capacity units (WCUs) ... you would need to provision six
    # WCUs to the table."
    assert sum(2 * item_write_units(None, blob(f"i{n}", 500)) for n in range(3)) == 6


# ---------------------------------------------------------------------------
# Index entries and index writes (rules of GSI.html#GSI.ThroughputConsiderations)
# ---------------------------------------------------------------------------

KEYS_ONLY = IndexSpec("by_status", "gsi_pk", "gsi_sk", "KEYS_ONLY")
INCLUDE = IndexSpec("by_owner", "owner", None, "INCLUDE", ("state",))
ALL = IndexSpec("by_kind", "kind", None, "ALL")
SPEC = TableSpec("jobs", "pk", None, (KEYS_ONLY, INCLUDE, ALL))


def test_index_entry_projection_and_sparseness() -> None:
    item = {
        "pk": {"S": "j1"},
        "gsi_pk": {"S": "ready"},
        "gsi_sk": {"S": "0001"},
        "owner": {"S": "ann"},
        "state": {"S": "new"},
        "payload": {"S": "zzz"},
    }
    assert index_entry(item, SPEC, KEYS_ONLY) == {
        "pk": {"S": "j1"},
        "gsi_pk": {"S": "ready"},
        "gsi_sk": {"S": "0001"},
    }
    assert index_entry(item, SPEC, INCLUDE) == {
        "pk": {"S": "j1"},
        "owner": {"S": "ann"},
        "state": {"S": "new"},
    }
    assert index_entry(item, SPEC, ALL) is None  # no "kind": not in the sparse index
    no_sort_key = {name: value for name, value in item.items() if name != "gsi_sk"}
    assert index_entry(no_sort_key, SPEC, KEYS_ONLY) is None
    assert index_entry(None, SPEC, KEYS_ONLY) is None


def only_keys_only(before: dict[str, Any] | None, after: dict[str, Any] | None) -> int:
    return index_write_units(before, after, TableSpec("jobs", "pk", None, (KEYS_ONLY,)))


def test_index_writes_for_each_documented_case() -> None:
    base = {"pk": {"S": "j1"}, "payload": {"S": "p"}}
    indexed = {**base, "gsi_pk": {"S": "ready"}, "gsi_sk": {"S": "0001"}}
    moved = {**indexed, "gsi_sk": {"S": "0002"}}
    touched = {**indexed, "payload": {"S": "changed"}}
    # "If an item is not present in the index before or after ..., there is no
    # additional write cost for the index."
    assert only_keys_only(base, {**base, "payload": {"S": "q"}}) == 0
    # "If you write a new item to the table that defines an indexed attribute ...
    # one write operation is required to put the item into the index."
    assert only_keys_only(None, indexed) == 1
    assert only_keys_only(base, indexed) == 1
    # "a write to the table caused the indexed attribute to be deleted, one write
    # is required to delete the old item projection from the index."
    assert only_keys_only(indexed, base) == 1
    assert only_keys_only(indexed, None) == 1
    # "If an update to the table changes the value of an indexed key attribute
    # (from A to B), two writes are required"
    assert only_keys_only(indexed, moved) == 2
    # A change to an attribute the index does not project changes no entry.
    assert only_keys_only(indexed, touched) == 0


def test_index_write_for_projected_non_key_change_and_entry_size() -> None:
    spec = TableSpec("jobs", "pk", None, (INCLUDE,))
    before = {"pk": {"S": "j1"}, "owner": {"S": "ann"}, "state": {"S": "new"}, "other": {"S": "x"}}
    # "changes the value of projected attributes ... but does not change the value
    # of any indexed key attribute, one write is required"
    assert index_write_units(before, {**before, "state": {"S": "done"}}, spec) == 1
    assert index_write_units(before, {**before, "other": {"S": "y"}}, spec) == 0
    # "Larger index entries require additional write capacity units": a 2.5 KB
    # projected attribute makes each index write 3 units.
    big = {**before, "state": {"S": "s" * 2500}}
    assert index_write_units(None, big, spec) == 3
    assert index_write_units(big, {**big, "owner": {"S": "bob"}}, spec) == 6  # key move: 3 + 3


def test_index_writes_sum_over_indexes_and_numbers_compare_by_value() -> None:
    item = {
        "pk": {"S": "j1"},
        "gsi_pk": {"S": "ready"},
        "gsi_sk": {"S": "1"},
        "owner": {"S": "ann"},
        "kind": {"S": "email"},
        "n": {"N": "1"},
    }
    assert index_write_units(None, item, SPEC) == 3  # one entry in each index
    # "1" and "1.0" are the same DynamoDB number: nothing changed anywhere.
    assert index_write_units(item, {**item, "n": {"N": "1.0"}}, SPEC) == 0


def test_table_spec_from_describe_table() -> None:
    description = {
        "TableName": "jobs",
        "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": "by_owner",
                "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["state"]},
            }
        ],
        "LocalSecondaryIndexes": [
            {
                "IndexName": "by_created",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "created", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    }
    assert TableSpec.from_description(description) == TableSpec(
        "jobs",
        "pk",
        "sk",
        (
            IndexSpec("by_owner", "owner", None, "INCLUDE", ("state",)),
            IndexSpec("by_created", "pk", "created", "KEYS_ONLY", local=True),
        ),
    )


# ---------------------------------------------------------------------------
# The meter, under moto
# ---------------------------------------------------------------------------

TABLE = "jobs"
GSI = "by_status"


@pytest.fixture(scope="module")
def moto_dynamodb() -> Iterator[Any]:
    """One moto and one client for the module (building them takes a second on a busy machine)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.setenv("AWS_SECURITY_TOKEN", "testing")
        monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
        monkeypatch.setenv("AWS_ACCOUNT_ID_ENDPOINT_MODE", "disabled")
        with mock_aws():
            yield boto3.client("dynamodb", region_name="us-east-1")


@pytest.fixture
def ddb(moto_dynamodb: Any) -> Iterator[Any]:
    """A moto DynamoDB client with a table, new for each test, that has a sparse KEYS_ONLY GSI."""
    client = moto_dynamodb
    if TABLE in client.list_tables()["TableNames"]:
        client.delete_table(TableName=TABLE)
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "gsi_pk", "gsi_sk")
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": GSI,
                "KeySchema": [
                    {"AttributeName": "gsi_pk", "KeyType": "HASH"},
                    {"AttributeName": "gsi_sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )
    yield client


@pytest.fixture
def meter(ddb: Any) -> Iterator[CapacityMeter]:
    capacity_meter = CapacityMeter(ddb)
    capacity_meter.attach()
    yield capacity_meter
    capacity_meter.detach()


def indexed(name: str, size: int, sort: str = "0001") -> dict[str, Any]:
    """An item of ``size`` bytes that is in the GSI (entry: pk, gsi_pk, gsi_sk)."""
    return blob(name, size, gsi_pk="ready", gsi_sk=sort)


def test_meter_3_kb_put_costs_3_plus_1_index_write(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=indexed("job-1", 3000))
    # 3000 bytes -> 3 WRU; the KEYS_ONLY entry (2+5 + 6+5 + 6+4 = 28 bytes) -> 1 WRU.
    assert meter.usage.write_units == 4
    assert meter.usage.read_units == 0
    assert meter.usage.calls == 1
    assert meter.usage.by_operation == {"PutItem": {"calls": 1, "write_units": 4, "read_units": 0}}


def test_meter_put_outside_the_sparse_index_costs_no_index_write(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("job-1", 3000))
    assert meter.usage.write_units == 3


def test_meter_put_replacing_a_larger_item_costs_the_larger(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("job-1", 5000))
    meter.reset()
    ddb.put_item(TableName=TABLE, Item=blob("job-1", 500))
    assert meter.usage.write_units == 5
    assert meter.usage.calls == 1


def test_meter_update_removing_gsi_key_costs_item_plus_1(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=indexed("job-1", 3000))
    meter.reset()
    ddb.update_item(TableName=TABLE, Key={"pk": {"S": "job-1"}}, UpdateExpression="REMOVE gsi_pk")
    # max(3000, 2989) -> 3 WRU, plus 1 write deleting the index entry.
    assert meter.usage.write_units == 3 + 1
    assert meter.usage.by_operation["UpdateItem"]["calls"] == 1


def test_meter_update_changing_gsi_sort_key_costs_2_index_writes(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=indexed("job-1", 3000))
    meter.reset()
    ddb.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "job-1"}},
        UpdateExpression="SET gsi_sk = :s",
        ExpressionAttributeValues={":s": {"S": "0002"}},
        ReturnValues="ALL_NEW",
    )
    assert meter.usage.write_units == 3 + 2


def test_meter_update_of_unprojected_attribute_costs_no_index_write(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=indexed("job-1", 3000))
    meter.reset()
    ddb.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "job-1"}},
        UpdateExpression="SET lease = :l",
        ExpressionAttributeValues={":l": {"N": "1700000000"}},
    )
    assert meter.usage.write_units == 3


def test_meter_update_growing_an_item_costs_the_after_size(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("job-1", 900))
    meter.reset()
    ddb.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "job-1"}},
        UpdateExpression="SET big = :b",
        ExpressionAttributeValues={":b": {"S": "b" * 2000}},
    )
    assert meter.usage.write_units == 3  # 900 + 3 + 2000 = 2903 bytes after


def test_meter_failed_conditional_put_on_existing_2_5_kb_item_costs_3(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("job-1", int(2.5 * KB)))
    meter.reset()
    with pytest.raises(ClientError) as failure:
        ddb.put_item(
            TableName=TABLE,
            Item=blob("job-1", 200),
            ConditionExpression="attribute_not_exists(pk)",
        )
    assert failure.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert meter.usage.write_units == 3
    assert meter.usage.calls == 1


def test_meter_failed_conditional_update_on_missing_item_costs_1(ddb: Any, meter: CapacityMeter) -> None:
    with pytest.raises(ClientError):
        ddb.update_item(
            TableName=TABLE,
            Key={"pk": {"S": "nobody"}},
            UpdateExpression="SET #s = :s",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":s": {"S": "claimed"}},
        )
    assert meter.usage.write_units == 1
    assert meter.usage.calls == 1


def test_meter_other_errors_count_a_call_but_no_units(ddb: Any, meter: CapacityMeter) -> None:
    with pytest.raises(ClientError):
        ddb.put_item(TableName="no-such-table", Item={"pk": {"S": "x"}})
    assert meter.usage.calls == 1
    assert meter.usage.write_units == 0


def test_meter_delete_costs_deleted_size_plus_index_and_missing_costs_1(
    ddb: Any, meter: CapacityMeter
) -> None:
    ddb.put_item(TableName=TABLE, Item=indexed("job-1", 3000))
    meter.reset()
    ddb.delete_item(TableName=TABLE, Key={"pk": {"S": "job-1"}})
    assert meter.usage.write_units == 3 + 1
    ddb.delete_item(TableName=TABLE, Key={"pk": {"S": "job-1"}})
    assert meter.usage.write_units == 3 + 1 + 1
    assert meter.usage.calls == 2


def test_meter_batch_write_rounds_each_item(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=indexed("old", 2000))
    meter.reset()
    ddb.batch_write_item(
        RequestItems={
            TABLE: [
                {"PutRequest": {"Item": blob("a", 500)}},
                {"PutRequest": {"Item": blob("b", int(3.5 * KB))}},
                {"DeleteRequest": {"Key": {"pk": {"S": "old"}}}},
            ]
        }
    )
    # RW's example 1 + 4, plus deleting a 2000-byte indexed item: 2 + 1.
    assert meter.usage.write_units == 1 + 4 + 2 + 1
    assert meter.usage.calls == 1


def test_meter_transaction_of_two_500_byte_puts_costs_4(ddb: Any, meter: CapacityMeter) -> None:
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": blob("a", 500)}},
            {"Put": {"TableName": TABLE, "Item": blob("b", 500)}},
        ]
    )
    assert meter.usage.write_units == 4
    assert meter.usage.calls == 1


def test_meter_transaction_doubles_table_writes_not_index_writes(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("guard", 300))
    meter.reset()
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": indexed("a", 1500)}},
            {
                "ConditionCheck": {
                    "TableName": TABLE,
                    "Key": {"pk": {"S": "guard"}},
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
        ]
    )
    # Put: 2 x 2 WRU + 1 index write; ConditionCheck on a 300-byte item: 2 x 1.
    assert meter.usage.write_units == 4 + 1 + 2


def test_meter_query_of_index_entries_costs_rounded_sum_halved(ddb: Any, meter: CapacityMeter) -> None:
    for number in range(40):
        # Base items are 3000 bytes, index entries 2+7 + 6+5 + 6+200 = 226 bytes.
        ddb.put_item(
            TableName=TABLE, Item=indexed(f"job-{number:03d}", 3000, sort=f"{number:04d}" + "s" * 196)
        )
    meter.reset()
    response = ddb.query(
        TableName=TABLE,
        IndexName=GSI,
        KeyConditionExpression="gsi_pk = :r",
        ExpressionAttributeValues={":r": {"S": "ready"}},
    )
    assert len(response["Items"]) == 40
    # 40 x 226 = 9040 bytes -> 12 KB -> 3 units, eventually consistent -> 1.5.
    # (Sized on base items it would be 120000 bytes -> 15.)
    assert meter.usage.read_units == 1.5
    assert meter.usage.calls == 1

    # A filter that drops every item does not lower the charge.
    meter.reset()
    filtered = ddb.query(
        TableName=TABLE,
        IndexName=GSI,
        KeyConditionExpression="gsi_pk = :r",
        FilterExpression="pk = :none",
        ExpressionAttributeValues={":r": {"S": "ready"}, ":none": {"S": "nobody"}},
    )
    assert filtered["Items"] == []
    assert meter.usage.read_units == 1.5


def test_meter_empty_query_costs_the_minimum(ddb: Any, meter: CapacityMeter) -> None:
    ddb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "nobody"}},
    )
    ddb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "nobody"}},
        ConsistentRead=True,
    )
    assert meter.usage.read_units == 0.5 + 1
    assert meter.usage.calls == 2


def test_meter_scan_with_filter_costs_evaluated_items(ddb: Any, meter: CapacityMeter) -> None:
    for name in ("a", "b", "c"):
        ddb.put_item(TableName=TABLE, Item=blob(name, 3000))
    meter.reset()
    response = ddb.scan(
        TableName=TABLE,
        FilterExpression="pk = :a",
        ProjectionExpression="pk",
        ExpressionAttributeValues={":a": {"S": "a"}},
    )
    assert len(response["Items"]) == 1
    assert meter.usage.read_units == 1.5  # 9000 bytes evaluated -> 3 units, halved


def test_meter_batch_get_of_3_small_items_eventually_consistent_costs_1_5(
    ddb: Any, meter: CapacityMeter
) -> None:
    for name in ("a", "b", "c"):
        ddb.put_item(TableName=TABLE, Item=blob(name, 100))
    meter.reset()
    keys = [{"pk": {"S": name}} for name in ("a", "b", "c")]
    response = ddb.batch_get_item(RequestItems={TABLE: {"Keys": keys}})
    assert len(response["Responses"][TABLE]) == 3
    assert meter.usage.read_units == 1.5
    assert meter.usage.calls == 1


def test_meter_batch_get_rounds_each_item_and_charges_missing_keys(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("a", int(1.5 * KB)))
    ddb.put_item(TableName=TABLE, Item=blob("b", int(6.5 * KB)))
    meter.reset()
    keys = [{"pk": {"S": name}} for name in ("a", "b", "missing")]
    ddb.batch_get_item(RequestItems={TABLE: {"Keys": keys, "ConsistentRead": True}})
    assert meter.usage.read_units == 1 + 2 + 1  # RW: 4 KB + 8 KB, and the missing key


def test_meter_get_item_sizes_whole_item_and_missing_costs_minimum(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("a", 7000))
    meter.reset()
    response = ddb.get_item(
        TableName=TABLE, Key={"pk": {"S": "a"}}, ConsistentRead=True, ProjectionExpression="pk"
    )
    assert response["Item"] == {"pk": {"S": "a"}}
    assert meter.usage.read_units == 2  # the projection does not shrink 7000 bytes
    ddb.get_item(TableName=TABLE, Key={"pk": {"S": "missing"}})
    assert meter.usage.read_units == 2 + 0.5
    assert meter.usage.by_operation["GetItem"] == {"calls": 2, "write_units": 0, "read_units": 2.5}


def test_meter_transact_get_doubles_and_charges_missing(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("a", 5000))
    meter.reset()
    ddb.transact_get_items(
        TransactItems=[
            {"Get": {"TableName": TABLE, "Key": {"pk": {"S": "a"}}}},
            {"Get": {"TableName": TABLE, "Key": {"pk": {"S": "missing"}}}},
        ]
    )
    assert meter.usage.read_units == 2 * 2 + 2 * 1


def test_meter_works_under_the_boto3_resource_layer(ddb: Any) -> None:
    resource = boto3.resource("dynamodb", region_name="us-east-1")
    table = resource.Table(TABLE)
    capacity_meter = CapacityMeter(resource.meta.client)
    capacity_meter.attach()
    table.put_item(Item={"pk": "r1", "payload": "x" * 2990})  # 2+2 + 7+2990 = 3001 bytes
    got = table.get_item(Key={"pk": "r1"})
    assert got["Item"]["pk"] == "r1"  # the resource layer still deserializes
    assert capacity_meter.usage.write_units == 3
    assert capacity_meter.usage.read_units == 0.5
    assert capacity_meter.usage.calls == 2


def test_meter_reset_and_detach(ddb: Any, meter: CapacityMeter) -> None:
    ddb.put_item(TableName=TABLE, Item=blob("a", 100))
    meter.reset()
    assert meter.usage.calls == 0
    assert meter.usage.by_operation == {}
    meter.detach()
    ddb.put_item(TableName=TABLE, Item=blob("b", 100))
    assert meter.usage.calls == 0
