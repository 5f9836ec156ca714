"""bench.partitions charges each metered call to the partition keys it touched.

A tiny synthetic sequence of calls with a known answer, no DynamoDB needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.capacity import IndexSpec, MeteredCall, TableSpec
from bench.partitions import TABLE, PartitionKey, PartitionLoad, describe_load

SPEC = TableSpec("t", "pk", "sk", (IndexSpec("ready", "gpk", "gsk", "KEYS_ONLY"),))


def s(**values: str) -> dict[str, Any]:
    return {name: {"S": value} for name, value in values.items()}


class FakeTable:
    """Items by (pk, sk): the after-images a listener reads back."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def at(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.items.get((key["pk"]["S"], key["sk"]["S"]))

    def call(
        self, op: str, params: dict[str, Any], *, after: dict[str, Any] | None = None, **kw: Any
    ) -> MeteredCall:
        """A metered call whose before-images are the table's items before `after` lands."""
        bodies = [next(iter(a.values())) for a in params.get("TransactItems", ())] or [params]
        before = [self.at("t", b.get("Key") or b["Item"]) for b in bodies] if op != "Query" else []
        if after is not None:
            self.items[(after["pk"]["S"], after["sk"]["S"])] = after
        return MeteredCall(
            op, {"TableName": "t", **params}, before, {}, kw.get("error"), 0.0, kw.get("read", 0.0)
        )


def test_units_land_on_table_and_index_keys() -> None:
    table = FakeTable()
    load = PartitionLoad(lambda _: SPEC, table.at)
    job = s(pk="J#s#0", sk="a", gpk="s#n#0", gsk="D#1")
    claimed = s(pk="J#s#0", sk="a", gpk="s#n#0")
    other = s(pk="J#s#1", sk="b", gpk="s#n#1", gsk="D#2")
    moved = s(pk="J#s#1", sk="b", gpk="CALLBACK#3", gsk="C#9")
    lease = s(pk="LEASE#1", sk="x")
    calls = [
        # A job appears: a table write on its pk, an index write on its gpk.
        table.call("PutItem", {"Item": job}, after=job),
        # A claim drops gsk: the entry leaves the index, a write on the old gpk.
        table.call("UpdateItem", {"Key": s(pk="J#s#0", sk="a")}, after=claimed),
        # A Query on the index reads the gpk it names.
        table.call(
            "Query",
            {
                "IndexName": "ready",
                "KeyConditionExpression": "#g = :p AND gsk <= :hi",
                "ExpressionAttributeNames": {"#g": "gpk"},
                "ExpressionAttributeValues": {":p": {"S": "s#n#0"}, ":hi": {"S": "D#9"}},
            },
            read=0.5,
        ),
        # The token: a missing item still costs half a read unit.
        table.call("GetItem", {"Key": s(pk="T", sk="tok")}),
        # A transaction: twice the table writes, a ConditionCheck billed as a write.
        table.call(
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Put": {"TableName": "t", "Item": lease}},
                    {"ConditionCheck": {"TableName": "t", "Key": s(pk="J#s#0", sk="a")}},
                ]
            },
            after=lease,
        ),
        # A failed conditional write still costs a unit on its key.
        table.call("UpdateItem", {"Key": s(pk="J#s#0", sk="a")}, error="ConditionalCheckFailedException"),
        # An entry that moves to another gpk writes both.
        table.call("PutItem", {"Item": other}, after=other),
        table.call("UpdateItem", {"Key": s(pk="J#s#1", sk="b")}, after=moved),
    ]
    for call in calls:
        load.record(call)

    table_key, index_key = (lambda v: PartitionKey("table", v)), (lambda v: PartitionKey("ready", v))
    assert load.writes == {
        table_key("J#s#0"): 5,
        index_key("s#n#0"): 2,
        table_key("LEASE#1"): 2,
        table_key("J#s#1"): 2,
        index_key("s#n#1"): 2,
        index_key("CALLBACK#3"): 1,
    }
    assert load.reads == {index_key("s#n#0"): 0.5, table_key("T"): 0.5}

    busiest = load.ceilings(jobs=1)[0]
    assert busiest.key == table_key("J#s#0")
    assert busiest.jobs_per_second == 200  # 5 write units a job against 1,000 a second
    assert busiest.write_share == 5 / 14

    lines = describe_load("w", load, jobs=1, spaces={"s"})
    assert lines[0] == "w: busiest key J#s#0 (table): 35.7% of writes, 0.0% of reads; ceiling: 200 jobs/s"
    shared = sorted(line.split(":")[1].strip() for line in lines[1:])
    assert shared == ["CALLBACK#n (ready), 1 key(s)", "LEASE#n (table), 1 key(s)", "T (table), 1 key(s)"]


def test_a_hashed_familys_headline_is_its_even_share_not_a_member_loaded_by_chance() -> None:
    """Ten jobs over 4 hashed partitions put 4 on one by chance; at scale each takes a quarter."""
    load = PartitionLoad(spec_of=lambda _t: None, item_at=lambda _t, _k: None)  # type: ignore[arg-type, return-value]
    for n, writes in enumerate([4, 3, 2, 1]):
        load.writes[PartitionKey(TABLE, f"J#s#{n}")] = float(writes)
    load.writes[PartitionKey(TABLE, "S#s")] = 1.0
    [headline] = describe_load("w", load, jobs=10, spaces={"s"}, spread={"J#s#n": 4})
    assert "each of 4 J#s#n (hashed)" in headline and "ceiling: 4,000 jobs/s" in headline
    [plain] = describe_load("w", load, jobs=10, spaces={"s"})
    assert "J#s#0" in plain and "ceiling: 2,500 jobs/s" in plain
