"""`emit dev` runs the fast embedded DynamoDB only on the moto version it was written for;
its transactions, fast or left to moto, are all or nothing, stream included."""

from __future__ import annotations

from typing import Any

import pytest
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.table import StreamRecord, Table

from devserver import wiring
from devserver.background import Background
from devserver.embedded import compat
from devserver.embedded.client import DirectDynamoDB
from shared.clock import ManualClock
from shared.store.dynamo import TransactionConflict, serialize


def test_the_fast_path_runs_on_the_moto_it_was_written_for() -> None:
    assert compat.installed_moto() == compat.MOTO_VERSION, (
        "pyproject.toml pins the moto the fast path was written for"
    )
    with mock_aws():
        runtime = wiring.build_runtime(fast=True)
        assert isinstance(runtime.dynamodb._client, DirectDynamoDB)
        assert not isinstance(wiring.build_runtime().dynamodb._client, DirectDynamoDB), "tests run plain moto"


def test_another_moto_runs_plain_moto_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(compat, "installed_moto", lambda: "9.9.9")
    with mock_aws():
        runtime = wiring.build_runtime(fast=True)
        assert not isinstance(runtime.dynamodb._client, DirectDynamoDB)
    assert "moto 9.9.9 is not 5.2.5" in capsys.readouterr().err


def _item(sk: str) -> dict[str, Any]:
    return serialize({"pk": "X", "sk": sk})


@pytest.mark.parametrize(
    ("fast", "last"),
    [
        (False, {"Put": {"Item": _item("2"), "ConditionExpression": "attribute_exists(pk)"}}),
        (True, {"Put": {"Item": _item("2"), "ConditionExpression": "attribute_exists(pk)"}}),
        # An Update action is the fast client's too.
        (
            True,
            {
                "Update": {
                    "Key": _item("2"),
                    "UpdateExpression": "SET a = :a",
                    "ConditionExpression": "attribute_exists(pk)",
                    "ExpressionAttributeValues": {":a": {"N": "1"}},
                }
            },
        ),
        # A condition with BETWEEN is left to moto's own transaction (and so to wiring's patches).
        (
            True,
            {
                "ConditionCheck": {
                    "Key": _item("2"),
                    "ConditionExpression": "a BETWEEN :lo AND :hi",
                    "ExpressionAttributeValues": {":lo": {"N": "1"}, ":hi": {"N": "2"}},
                }
            },
        ),
    ],
    ids=["plain", "fast", "fast-update", "fast-left-to-moto"],
)
def test_a_cancelled_transaction_leaves_the_stream_as_it_was(fast: bool, last: dict[str, Any]) -> None:
    """On DynamoDB a cancelled transaction writes no stream record, and a reader of the
    stream goes on seeing what is written after it (moto's rollback swaps the shard)."""
    with mock_aws():
        runtime = wiring.build_runtime(clock=ManualClock(), fast=fast)
        reader = Background(runtime)
        reader.records()  # the reader is at the stream's end
        with pytest.raises(TransactionConflict):
            runtime.db.transact([{"Put": {"Item": _item("1")}}, last])
        runtime.db.transact([{"Put": {"Item": _item("3")}}])
        assert [r["dynamodb"]["Keys"]["sk"]["S"] for r in reader.records()] == ["3"]


@pytest.mark.parametrize("fast", [False, True], ids=["plain", "fast"])
def test_a_transactions_backup_is_not_kept_and_leaves_the_stream_out(fast: bool) -> None:
    """moto backs up each table a transaction touches (a deep copy) and keeps every instance
    of its models until the mock ends: a long local run, and `make bench`, grew by a whole
    table, every stream record it ever wrote included, at each transaction. (The fast client
    keeps only the items a transaction replaces, updates included, and no tracked record.)"""
    with mock_aws():
        runtime = wiring.build_runtime(clock=ManualClock(), fast=fast)
        shard = dynamodb_backends[DEFAULT_ACCOUNT_ID][wiring.REGION].tables[wiring.TABLE].stream_shard
        assert shard is not None
        for n in range(20):
            runtime.db.transact([{"Put": {"Item": _item(f"a{n}")}}, {"Put": {"Item": _item(f"b{n}")}}])
        tables, records = len(Table.instances_tracked), len(StreamRecord.instances_tracked)
        written = len(shard.items)
        for n in range(20):
            add = {"UpdateExpression": "ADD n :one", "ExpressionAttributeValues": serialize({":one": 1})}
            runtime.db.transact(
                [{"Put": {"Item": _item(f"c{n}")}}, {"Update": {"Key": _item(f"b{n}")} | add}]
            )
        assert len(Table.instances_tracked) == tables, "no backup kept"
        assert len(shard.items) == written + 40, "only the records written"
        assert len(StreamRecord.instances_tracked) == records + (0 if fast else 40), "none kept besides"
