"""The embedded DynamoDB's transactions (devserver.wiring's patches of moto): all or
nothing as on AWS, at the price of one backup of the table per transaction."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from devserver import wiring
from shared.runtime import Runtime
from shared.store.dynamo import TransactionConflict, serialize


def puts(n: int, *, last_condition: str | None = None) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = [
        {"Put": {"Item": serialize({"pk": "X", "sk": f"{i:03d}"})}} for i in range(n)
    ]
    if last_condition:
        actions[-1]["Put"]["ConditionExpression"] = last_condition
    return actions


def stored(rt: Runtime) -> list[str]:
    rows, _ = rt.db.query("pk = :pk", vals={":pk": "X"}, consistent=True)
    return [r["sk"] for r in rows]


def test_a_cancelled_transaction_writes_nothing(rt: Runtime) -> None:
    with pytest.raises(TransactionConflict):
        rt.db.transact(puts(50, last_condition="attribute_exists(pk)"))
    assert stored(rt) == []
    rt.db.transact(puts(50))
    assert len(stored(rt)) == 50


def test_a_transaction_backs_up_its_table_once(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    copied: list[str] = []

    def deepcopy(value: Any, memo: Any = None) -> Any:
        copied.append(type(value).__name__)
        return copy.deepcopy(value, memo)

    monkeypatch.setattr(wiring, "copy", SimpleNamespace(deepcopy=deepcopy))
    rt.db.transact(puts(100))
    assert copied == ["Table"], "moto backs up the table before each of the 100 actions"
