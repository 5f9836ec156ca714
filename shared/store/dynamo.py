"""A thin, typed face on the DynamoDB client: plain Python values in and out.

Numbers come back as int (or float when fractional) instead of Decimal, a failed
condition is a `ConditionFailed` carrying the item as it stood, and batch calls chunk
and retry their unprocessed parts.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

Item = dict[str, Any]

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


class ConditionFailed(Exception):
    """The item was not as the write expected; `item` is how it stood (None: absent)."""

    def __init__(self, item: Item | None) -> None:
        super().__init__("condition failed")
        self.item = item


class TransactionConflict(Exception):
    """A transaction was cancelled; `reasons` has one entry per action, in order."""

    def __init__(self, reasons: list[dict[str, Any]]) -> None:
        super().__init__("transaction cancelled")
        self.reasons = reasons


def _to_wire(value: Any) -> Any:
    if isinstance(value, float):
        return _number(Decimal(repr(value)))
    if isinstance(value, int) and not isinstance(value, bool):
        return _number(value)
    if isinstance(value, Mapping):
        return {k: _to_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_wire(v) for v in value]
    return value


def _number(value: Decimal | int) -> Decimal | int:
    """A number DynamoDB can hold: 38 significant digits, magnitudes 1e-130 to 1e126.
    Requests are checked for this where they enter (a 400 naming the field); this says
    plainly which value got past, where boto3 would raise a bare decimal signal."""
    if isinstance(value, int):
        if abs(value) >= 10**38:
            raise ValueError(f"{value} has more digits than a DynamoDB number holds")
        return value
    if value and not (-130 <= value.adjusted() <= 125 and len(value.as_tuple().digits) <= 38):
        raise ValueError(f"{value} is not a number DynamoDB can hold")
    return value


def _from_wire(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Binary):
        return bytes(getattr(value, "value"))  # noqa: B009 - untyped in the stubs
    if isinstance(value, dict):
        return {k: _from_wire(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_wire(v) for v in value]
    if isinstance(value, set):
        return {_from_wire(v) for v in value}
    return value


def serialize(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(_to_wire(v)) for k, v in item.items() if v is not None}


def deserialize(item: Mapping[str, Any]) -> Item:
    return {k: _from_wire(_deserializer.deserialize(v)) for k, v in item.items()}


def values(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """ExpressionAttributeValues from plain values."""
    return {k: _serializer.serialize(_to_wire(v)) for k, v in mapping.items()}


def _chunks(seq: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


class Dynamo:
    def __init__(self, client: Any, table: str) -> None:
        """`client`: a DynamoDB client, or a wrapper with the same calls (see devserver.wiring)."""
        self.client = client
        self.table = table

    def get(self, key: Mapping[str, str], *, consistent: bool = True) -> Item | None:
        answer = self.client.get_item(TableName=self.table, Key=serialize(key), ConsistentRead=consistent)
        return deserialize(answer["Item"]) if "Item" in answer else None

    def put(
        self,
        item: Mapping[str, Any],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        vals: Mapping[str, Any] | None = None,
    ) -> None:
        params: dict[str, Any] = {"TableName": self.table, "Item": serialize(item)}
        _add_condition(params, condition, names, vals)
        self._conditional(self.client.put_item, params)

    def update(
        self,
        key: Mapping[str, str],
        expression: str,
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        vals: Mapping[str, Any] | None = None,
        returns: str = "NONE",
    ) -> Item:
        params: dict[str, Any] = {
            "TableName": self.table,
            "Key": serialize(key),
            "UpdateExpression": expression,
            "ReturnValues": returns,
        }
        _add_condition(params, condition, names, vals)
        answer = self._conditional(self.client.update_item, params)
        return deserialize(answer.get("Attributes", {}))

    def apply(self, key: Mapping[str, str], update: Any, *, returns: str = "NONE") -> Item:
        """Run an UpdateItem built by `shared.store.codec.UpdateBuilder`."""
        return self.update(
            key,
            update.expression(),
            condition=update.condition(),
            names=update.names,
            vals=update.vals,
            returns=returns,
        )

    def delete(
        self,
        key: Mapping[str, str],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        vals: Mapping[str, Any] | None = None,
    ) -> None:
        params: dict[str, Any] = {"TableName": self.table, "Key": serialize(key)}
        _add_condition(params, condition, names, vals)
        self._conditional(self.client.delete_item, params)

    def query(
        self,
        key_condition: str,
        *,
        names: Mapping[str, str] | None = None,
        vals: Mapping[str, Any],
        index: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        consistent: bool = False,
        start: Mapping[str, Any] | None = None,
        filter_expression: str | None = None,
        projection: str | None = None,
    ) -> tuple[list[Item], dict[str, Any] | None]:
        """One page: the items, and the key to start the next page from (None: no more)."""
        params: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeValues": values(vals),
            "ScanIndexForward": forward,
        }
        if names:
            params["ExpressionAttributeNames"] = dict(names)
        if index:
            params["IndexName"] = index
        else:
            params["ConsistentRead"] = consistent
        if limit:
            params["Limit"] = limit
        if start:
            params["ExclusiveStartKey"] = serialize(start)
        if filter_expression:
            params["FilterExpression"] = filter_expression
        if projection:
            params["ProjectionExpression"] = projection
        answer = self.client.query(**params)
        last = answer.get("LastEvaluatedKey")
        return [deserialize(i) for i in answer.get("Items", [])], (deserialize(last) if last else None)

    def batch_put(self, items: Sequence[Mapping[str, Any]]) -> None:
        self._batch_write([{"PutRequest": {"Item": serialize(i)}} for i in items])

    def batch_delete(self, keys: Iterable[Mapping[str, str]]) -> None:
        self._batch_write([{"DeleteRequest": {"Key": serialize(k)}} for k in keys])

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        for chunk in _chunks(requests, 25):
            pending: list[Any] = list(chunk)
            for attempt in range(10):
                answer = self.client.batch_write_item(RequestItems={self.table: pending})
                pending = answer.get("UnprocessedItems", {}).get(self.table, [])
                if not pending:
                    break
                time.sleep(min(0.05 * 2**attempt, 1.0))
            if pending:
                raise RuntimeError(f"DynamoDB left {len(pending)} writes unprocessed")

    def batch_get(self, keys: Sequence[Mapping[str, str]], *, consistent: bool = True) -> list[Item]:
        found: list[Item] = []
        for chunk in _chunks(keys, 100):
            pending: dict[str, Any] = {
                self.table: {"Keys": [serialize(k) for k in chunk], "ConsistentRead": consistent}
            }
            for attempt in range(10):
                answer = self.client.batch_get_item(RequestItems=pending)
                found.extend(deserialize(i) for i in answer.get("Responses", {}).get(self.table, []))
                pending = answer.get("UnprocessedKeys") or {}
                if not pending:
                    break
                time.sleep(min(0.05 * 2**attempt, 1.0))
        return found

    def transact(self, actions: list[dict[str, Any]]) -> None:
        """TransactWriteItems; each action is e.g. {"Put": {...}} without TableName."""
        for action in actions:
            next(iter(action.values()))["TableName"] = self.table
        try:
            self.client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons: list[Any] = exc.response.get("CancellationReasons", [])
            raise TransactionConflict(
                [
                    {"code": r.get("Code"), "item": deserialize(r["Item"]) if r.get("Item") else None}
                    for r in reasons
                ]
            ) from None

    @staticmethod
    def _conditional(call: Any, params: dict[str, Any]) -> Any:
        if "ConditionExpression" in params:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        try:
            return call(**params)
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old: Any = exc.response.get("Item")
            raise ConditionFailed(deserialize(old) if old else None) from None


def _add_condition(
    params: dict[str, Any],
    condition: str | None,
    names: Mapping[str, str] | None,
    vals: Mapping[str, Any] | None,
) -> None:
    if condition:
        params["ConditionExpression"] = condition
    if names:
        params["ExpressionAttributeNames"] = dict(names)
    if vals:
        params["ExpressionAttributeValues"] = values(vals)
