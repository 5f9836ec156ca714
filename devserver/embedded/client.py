"""A DynamoDB client that calls moto's backend directly, without botocore in between.

One boto3 call into moto costs about 2 ms of request building, signing, serializing and
parsing before moto does anything; moto then parses each expression again on every call,
builds each item attribute by attribute re-measuring the whole item each time, and copies
whole tables for a transaction. Here:

- Every call goes to moto's own request handler (moto.dynamodb.responses.DynamoHandler) with
  the request as boto3 would have sent it, and its answer comes back as boto3 would have
  parsed it: the same validation, the same errors.
- The calls the store makes most (PutItem, UpdateItem, DeleteItem, GetItem, Query,
  BatchWriteItem, TransactWriteItems) are done here instead, step for step as moto's
  handler and backend do them and with moto's own pieces (its condition trees, items,
  errors, stream records and Table.query), with each expression parsed once per shape
  (`expressions`), each item built once, answers built without moto's generic converter,
  and a transaction undone item by item instead of by restoring a copy of each table (a
  transaction's update of a form not applied here is applied by moto's own validator and
  executor, to its one item). A request of any other shape than handled here goes to
  moto's handler, which answers it.
- Queries are answered from per-partition lookups (`partitions`).

Errors are raised as boto3 raises them: moto's error response parsed by botocore's parser
(with the modeled fields: the `Item` of a failed condition, a transaction's
`CancellationReasons`) into the client's modeled ClientError subclass. `ResponseMetadata` is
the one thing missing from answers. Parameters are not validated against the API model as
boto3 does before sending: the store only sends valid ones.

tests/local/test_conformance.py runs the store's calls through this client and through
boto3 into plain moto and requires the same answers, items and stream records.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.exceptions import JsonRESTError
from moto.core.utils import utcnow
from moto.dynamodb.comparisons import Func, Op
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    ExpressionAttributeValuesEmpty,
    ItemSizeTooLarge,
    ItemSizeToUpdateTooLarge,
    MockValidationException,
    MultipleTransactionsException,
    TransactionCanceledException,
)
from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import StreamRecord, Table
from moto.dynamodb.models.utilities import bytesize, dynamo_json_dump, dynamo_to_dict
from moto.dynamodb.parsing.executors import UpdateExpressionExecutor
from moto.dynamodb.parsing.validators import UpdateExpressionValidator
from moto.dynamodb.responses import (
    DynamoHandler,
    validate_attributes_used,
    validate_put_has_empty_attrs,
    validate_put_has_empty_keys,
    validate_put_has_gsi_keys_set_to_none,
)
from moto.moto_api._internal import mock_random

from devserver.embedded import expressions, partitions
from devserver.embedded.wire import Wire

_DEFER = object()
"""A fast path's answer when the request is not of a shape it handles: moto's handler answers."""
_NUMBER = re.compile(r"-?[0-9]{1,38}(\.[0-9]{1,38})?")
_UPDATE_CAPACITY = 0.5
_BATCH_EMPTY_KEY = (
    "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain "
    "an empty string value. Key: {}"
)
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


class DirectDynamoDB:
    """The DynamoDB calls of boto3's client, answered by moto's backend in this process."""

    def __init__(self, region: str, account_id: str = DEFAULT_ACCOUNT_ID) -> None:
        self.region = region
        self.account_id = account_id
        self._wire = Wire("dynamodb", region)
        self._handler = DynamoHandler()
        self._handler.current_account = account_id
        self._handler.region = region
        self._fast: dict[str, Callable[[dict[str, Any]], Any]] = {
            "PutItem": self._put_item,
            "UpdateItem": self._update_item,
            "DeleteItem": self._delete_item,
            "BatchWriteItem": self._batch_write_item,
            "TransactWriteItems": self._transact_write_items,
            "Query": self._query,
            "GetItem": self._get_item,
        }
        self._dates: dict[str, bool] = {}
        self._operations = {_SNAKE.sub("_", name).lower(): name for name in self._wire.model.operation_names}

    @property
    def backend(self) -> DynamoDBBackend:
        backend: DynamoDBBackend = dynamodb_backends[self.account_id][self.region]
        return backend

    def __getattr__(self, name: str) -> Callable[..., dict[str, Any]]:
        operation = self._operations.get(name)
        if operation is None:
            raise AttributeError(name)

        def call(**params: Any) -> dict[str, Any]:
            return self.call(operation, params)

        call.__name__ = name
        return call

    def streams(self) -> Any:
        """A DynamoDB Streams client on the same backend (for `emit dev`'s stream reader)."""
        from devserver.embedded.streams import DirectStreams  # noqa: PLC0415 - only the reader needs it

        return DirectStreams(self.region, self.account_id)

    def expired_keys(self, *, TableName: str, Now: int) -> list[dict[str, Any]]:
        """Keys of the items whose TTL attribute is a number at most `Now` (epoch seconds), in
        the order a Scan returns them: what `emit dev`'s TTL sweep scans for, without reading
        the whole table every few seconds."""
        found = self._table(TableName)
        if found is None:
            return []
        table, parts = found
        keys = sorted(parts.expired(Decimal(Now)), key=lambda k: (k[0].cast_value, k[1].cast_value))
        return [
            {table.hash_key_attr: {h.type: h.value}, str(table.range_key_attr): {r.type: r.value}}
            for h, r in keys
        ]

    # -- the call -----------------------------------------------------------------------

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        """One API call (`operation` as the API names it, e.g. "PutItem")."""
        try:
            fast = self._fast.get(operation)
            answer = fast(params) if fast is not None else _DEFER
            if answer is _DEFER:
                answer = self._handle(operation, params)
        except JsonRESTError as exc:
            raise self._wire.error(operation, exc) from None
        finally:
            partitions.forget_tracked()
        return self._shaped(operation, answer)

    def _handle(self, operation: str, params: dict[str, Any]) -> Any:
        handler = self._handler
        handler.body = params
        handler.params = params
        handler.uri_match = {}
        method = getattr(handler, _SNAKE.sub("_", operation).lower())
        result = method()
        if not self._dated(operation):
            return result.result
        # Dates (a table's creation time) come out of moto as naive datetimes; its serializer
        # writes them as epoch seconds and botocore reads them back in local time: do both.
        return self._wire.parsed(operation, result, handler)

    def _dated(self, operation: str) -> bool:
        if operation not in self._dates:
            self._dates[operation] = _has_timestamp(self._wire.output(operation), set())
        return self._dates[operation]

    def _shaped(self, operation: str, answer: Any) -> dict[str, Any]:
        """The answer as botocore's parser gives it: only the members of the operation's output,
        and none that moto left empty (None)."""
        shape = self._wire.output(operation)
        if shape is None or not isinstance(answer, dict):
            return {}
        members = shape.members
        return {k: v for k, v in answer.items() if k in members and v is not None}

    # -- shared steps ---------------------------------------------------------------------

    def _table(self, name: Any) -> tuple[Table, partitions.TablePartitions] | None:
        table = self.backend.tables.get(name) if isinstance(name, str) else None
        if table is None:
            return None
        found = partitions.partitions(table) or partitions.enable(table)
        return None if found is None else (table, found)

    def _values(self, params: dict[str, Any]) -> dict[str, Any]:
        """ExpressionAttributeValues, with moto's checks of them (DynamoHandler._get_expr_attr_values)."""
        self._handler.body = params
        return self._handler._get_expr_attr_values()

    @staticmethod
    def _key(table: Table, key: Any) -> tuple[DynamoType, DynamoType] | None:
        """The primary key of a request's Key (exactly the table's key attributes, of the
        declared types, not empty), or None to leave the request to moto."""
        if not isinstance(key, dict) or set(key) != {table.hash_key_attr, table.range_key_attr}:
            return None
        hash_key = _typed(key[table.hash_key_attr], table.hash_key_type)
        range_key = _typed(key[table.range_key_attr], table.range_key_type)  # type: ignore[arg-type]
        if hash_key is None or range_key is None:
            return None
        return hash_key, range_key

    def _new_item(self, table: Table, attrs: dict[str, Any]) -> Item | None:
        """What Table.put_item builds from `attrs`, with its checks (raised as moto raises
        them), or None when moto should build it (and refuse it): a missing or mistyped key,
        an odd value, or an item over moto's size limit."""
        keys = _typed_keys(table, attrs)
        bound = _item_bound(attrs)
        if keys is None or bound < 0:
            return None
        # Table._validate_item_types refuses numbers that are not numbers, strings that are not
        # strings and nulls that are not true: none passes `_item_bound`.
        table._validate_key_sizes(attrs)
        # Item() refuses an item over its limit as it adds the attribute that passes it: the
        # same limit, measured once at the end (the measure only grows), and only when a
        # quick bound does not already show the item fits.
        item = partitions.build_item(*keys, attrs)
        if bound > partitions.MAX_ITEM_SIZE and partitions.size(item) > partitions.MAX_ITEM_SIZE:
            return None
        return item

    @staticmethod
    def _store(table: Table, parts: partitions.TablePartitions, item: Item, current: Item | None) -> None:
        """The end of Table.put_item: the item in place, its stream record."""
        table.items[item.hash_key][item.range_key] = item
        parts.reconcile_item(*_key_of(item), item)
        _record(table, current, item)

    @staticmethod
    def _check(op: Op | Func, current: Item | None, return_values: str | None) -> None:
        if not op.expr(current):
            if return_values == "ALL_OLD" and current is not None:
                raise ConditionalCheckFailed(item=current.to_json()["Attributes"])
            raise ConditionalCheckFailed

    # -- PutItem --------------------------------------------------------------------------

    _PUT = frozenset(
        {
            "TableName",
            "Item",
            "ConditionExpression",
            "ExpressionAttributeNames",
            "ExpressionAttributeValues",
            "ReturnValuesOnConditionCheckFailure",
        }
    )

    def _put_item(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.put_item -> DynamoDBBackend.put_item -> Table.put_item, without
        ReturnValues."""
        found = self._table(params.get("TableName"))
        if found is None or not self._PUT.issuperset(params) or not isinstance(params.get("Item"), dict):
            return _DEFER
        table, parts = found
        attrs = params["Item"]
        validate_put_has_empty_keys(attrs, table)
        validate_put_has_empty_attrs(attrs, table)
        validate_put_has_gsi_keys_set_to_none(attrs, table)
        expression = params.get("ConditionExpression")
        names = params.get("ExpressionAttributeNames", {})
        values = self._values(params)
        condition = expressions.condition(expression, names, values)
        if condition is None:
            return _DEFER
        validate_attributes_used(names, list(condition.names))
        item = self._new_item(table, attrs)
        if item is None:
            return _DEFER
        current = table.get_item(item.hash_key, item.range_key)
        if expression:
            self._check(condition.bind(values), current, params.get("ReturnValuesOnConditionCheckFailure"))
        self._store(table, parts, item, current)
        return {}

    # -- UpdateItem -----------------------------------------------------------------------

    _UPDATE = frozenset(
        {
            "TableName",
            "Key",
            "UpdateExpression",
            "ConditionExpression",
            "ExpressionAttributeNames",
            "ExpressionAttributeValues",
            "ReturnValues",
            "ReturnValuesOnConditionCheckFailure",
        }
    )

    def _update_item(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.update_item -> DynamoDBBackend.update_item, for SET/REMOVE/ADD of
        top-level attributes, returning nothing or the new item."""
        found = self._table(params.get("TableName"))
        returns = params.get("ReturnValues", "NONE")
        if found is None or not self._UPDATE.issuperset(params) or returns not in ("NONE", "ALL_NEW"):
            return _DEFER
        table, parts = found
        key = self._key(table, params.get("Key"))
        text = params.get("UpdateExpression")
        plan = expressions.update(text.strip()) if isinstance(text, str) and text.strip() else None
        if key is None or plan is None:
            return _DEFER
        names = params.get("ExpressionAttributeNames", {})
        values = self._values(params)
        expression = params.get("ConditionExpression")
        condition = expressions.condition(expression, names, values)
        if condition is None or not plan.names <= set(names) or not plan.values <= set(values):
            return _DEFER
        validate_attributes_used(names, [*plan.names, *condition.names])
        validate_attributes_used(values, [*plan.values, *condition.values], "Values")
        actions = _resolve(table, plan, names, values)
        if actions is None:
            return _DEFER
        item = table.get_item(*key)
        if not _fits(table, key, item, actions):
            return _DEFER
        # From here on moto would not refuse the request: its steps, in its order.
        self._check(condition.bind(values), item, params.get("ReturnValuesOnConditionCheckFailure"))
        before = _snapshot(item)
        item = _stored_for_update(table, item, key)
        _apply(item, actions)
        parts.reconcile_item(*_key_of(item), item)
        _record(table, before, item)
        answer: dict[str, Any] = {
            "ConsumedCapacity": {"TableName": table.name, "CapacityUnits": _UPDATE_CAPACITY}
        }
        if returns == "ALL_NEW":
            answer["Attributes"] = _attributes(item)
        return answer

    # -- DeleteItem -----------------------------------------------------------------------

    _DELETE = frozenset(
        {
            "TableName",
            "Key",
            "ConditionExpression",
            "ExpressionAttributeNames",
            "ExpressionAttributeValues",
            "ReturnValuesOnConditionCheckFailure",
        }
    )

    def _delete_item(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.delete_item -> DynamoDBBackend.delete_item, without ReturnValues."""
        found = self._table(params.get("TableName"))
        if found is None or not self._DELETE.issuperset(params):
            return _DEFER
        table, _ = found
        key = self._key(table, params.get("Key"))
        if key is None:
            return _DEFER
        names = params.get("ExpressionAttributeNames", {})
        values = self._values(params)
        expression = params.get("ConditionExpression")
        condition = expressions.condition(expression, names, values)
        if condition is None:
            return _DEFER
        validate_attributes_used(names, list(condition.names))
        item = table.get_item(*key)
        self._check(condition.bind(values), item, params.get("ReturnValuesOnConditionCheckFailure"))
        table.delete_item(*key)
        return {}

    # -- GetItem ------------------------------------------------------------------------

    def _get_item(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.get_item -> DynamoDBBackend.get_item, for a whole item by its key."""
        found = self._table(params.get("TableName"))
        if found is None or not {"TableName", "Key", "ConsistentRead"}.issuperset(params):
            return _DEFER
        table, _ = found
        key = self._key(table, params.get("Key"))
        if key is None:
            return _DEFER
        item = table.get_item(*key)
        if item is None:
            return {}
        return {"Item": {name: _moto_dict(value) for name, value in item.attrs.items()}}

    # -- Query --------------------------------------------------------------------------

    _QUERY = frozenset(
        {
            "TableName",
            "KeyConditionExpression",
            "ExpressionAttributeNames",
            "ExpressionAttributeValues",
            "IndexName",
            "Limit",
            "ScanIndexForward",
            "ConsistentRead",
            "ExclusiveStartKey",
            "FilterExpression",
        }
    )

    def _query(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.query -> DynamoDBBackend.query -> Table.query (answered from the
        partition lookups), with the key condition and the filter parsed once per shape."""
        found = self._table(params.get("TableName"))
        text = params.get("KeyConditionExpression")
        if (
            found is None
            or not self._QUERY.issuperset(params)
            or not text
            or params.get("FilterExpression") == ""
        ):
            return _DEFER
        table, _ = found
        names = params.get("ExpressionAttributeNames", {})
        values = self._values(params)
        filtered = expressions.condition(params.get("FilterExpression"), names, values)
        if filtered is None:
            return _DEFER
        index_name = params.get("IndexName")
        schema = self.backend.get_schema(table_name=table.name, index_name=index_name)
        condition = expressions.key_condition(text, names, values, schema)
        bound = condition.bind(values) if condition is not None else None
        if condition is None or bound is None:
            return _DEFER
        validate_attributes_used(names, [*filtered.names, *condition.names], validation_error_prefix=False)
        hashes, ranges = bound
        items, scanned, last = table.query(
            DynamoType(hashes[0][1]) if hashes else None,
            ranges[-1][1] if ranges else None,
            [DynamoType(v) for v in ranges[-1][2]] if ranges else [],
            cast(int, params.get("Limit")),  # moto's handler passes None too
            cast(dict[str, Any], params.get("ExclusiveStartKey")),
            params.get("ScanIndexForward", True),
            [],
            index_name,
            params.get("ConsistentRead", False),
            filtered.bind(values),
            hash_key_conditions=[(name, DynamoType(v)) for name, v in hashes],
            range_key_conditions=[(name, op, [DynamoType(v) for v in vs]) for name, op, vs in ranges],
        )
        answer: dict[str, Any] = {
            "Count": len(items),
            "ScannedCount": scanned,
            "Items": [{name: _moto_dict(value) for name, value in item.attrs.items()} for item in items],
        }
        if last is not None:
            answer["LastEvaluatedKey"] = {name: _moto_dict(value) for name, value in last.items()}
        return answer

    # -- BatchWriteItem -------------------------------------------------------------------

    def _batch_write_item(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.batch_write_item: every put, then every delete."""
        batches = params.get("RequestItems")
        if set(params) != {"RequestItems"} or not isinstance(batches, dict):
            return _DEFER
        requests = self._batch_requests(batches)
        if requests is None:
            return _DEFER
        puts, deletes = requests
        if _duplicates([k[1] for k in deletes]) or _duplicates([p[2] for p in puts]):
            return _DEFER
        try:
            # moto stores the puts before a refused one: let moto refuse it.
            built = [(table, parts, self._new_item(table, attrs)) for table, parts, attrs in puts]
        except JsonRESTError:
            return _DEFER
        keys = [(table, self._key(table, key)) for table, key in deletes]
        if any(item is None for _, _, item in built) or any(key is None for _, key in keys):
            return _DEFER
        for table, parts, item in built:
            assert item is not None
            self._store(table, parts, item, table.get_item(item.hash_key, item.range_key))
        for table, key in keys:
            assert key is not None
            table.delete_item(*key)
        return {
            "ConsumedCapacity": [
                {"TableName": name, "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}} for name in batches
            ],
            "ItemCollectionMetrics": {},
            "UnprocessedItems": {},
        }

    def _batch_requests(
        self, batches: dict[str, Any]
    ) -> (
        tuple[list[tuple[Table, partitions.TablePartitions, dict[str, Any]]], list[tuple[Table, Any]]] | None
    ):
        """The puts and deletes of a batch, checked as moto checks them (its errors raised), or
        None for moto to answer the batch."""
        puts: list[tuple[Table, partitions.TablePartitions, dict[str, Any]]] = []
        deletes: list[tuple[Table, Any]] = []
        for table_name, requests in batches.items():
            found = self._table(table_name)
            if found is None or not isinstance(requests, list):
                return None
            table, parts = found
            for request in requests:
                kind, body = (
                    next(iter(request.items()))
                    if isinstance(request, dict) and len(request) == 1
                    else ("", {})
                )
                if kind == "PutRequest":
                    validate_put_has_empty_keys(body["Item"], table, custom_error_msg=_BATCH_EMPTY_KEY)
                    puts.append((table, parts, body["Item"]))
                elif kind == "DeleteRequest":
                    deletes.append((table, body["Key"]))
                else:
                    return None
        return puts, deletes

    # -- TransactWriteItems ---------------------------------------------------------------

    def _transact_write_items(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.transact_write_items -> DynamoDBBackend.transact_write_items: Put,
        Update, Delete and ConditionCheck, each action in turn. moto keeps a deep copy of each
        table a transaction touches to restore if it is cancelled (and
        `keep_streams_through_rollbacks` then puts the live stream shard back); here each
        write keeps the item it replaced instead, and a cancelled or refused transaction puts
        those back and drops its stream records."""
        actions = params.get("TransactItems")
        if set(params) != {"TransactItems"} or not isinstance(actions, list) or len(actions) > 100:
            return _DEFER
        steps = []
        for action in actions:
            step = self._transact_step(action)
            if step is None:
                return _DEFER
            steps.append(step)
        shards = {
            s.table.name: (s.table.stream_shard, len(s.table.stream_shard.items))
            for s in steps
            if s.table.stream_shard is not None
        }
        undo: list[tuple[_Step, Item | None]] = []
        errors = []
        targets: set[tuple[str, str]] = set()
        try:
            for step in steps:
                if step.target in targets:
                    raise MultipleTransactionsException
                targets.add(step.target)
                errors.append(self._transact_run(step, undo))
        except MockValidationException:
            _undo(undo, shards)  # moto restores its copies, and raises
            raise
        if any(code is not None for code, _, _ in errors):
            _undo(undo, shards)
            raise TransactionCanceledException(errors)
        return {"ConsumedCapacity": [], "ItemCollectionMetrics": {}}

    def _transact_run(self, step: _Step, undo: list[tuple[_Step, Item | None]]) -> tuple[Any, Any, Any]:
        """One action of DynamoDBBackend.transact_write_items: its cancellation reason, or
        (None, None, None); what it replaced goes to `undo`. A ValidationException (raised
        by moto's update steps) ends the whole transaction, as in moto."""
        current = step.table.get_item(*step.key)
        original: dict[str, Any] | None = None
        try:
            if step.op.get("ConditionExpression") is not None:
                tree = step.condition.bind(step.op.get("ExpressionAttributeValues"))
                if not tree.expr(current):
                    if step.op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                        original = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=original)
            if step.kind == "Put":
                assert step.item is not None
                undo.append((step, current))
                self._store(step.table, step.parts, step.item, current)
            elif step.kind == "Delete":
                undo.append((step, current))
                step.table.delete_item(*step.key)
            elif step.kind == "Update":
                return _transact_update(step, current, undo)
        except ConditionalCheckFailed as exc:
            return ("ConditionalCheckFailed", str(exc.message), original)
        return (None, None, None)

    def _transact_step(self, action: Any) -> _Step | None:
        """One action, checked as DynamoHandler.transact_write_items checks it (its errors
        raised), or None for moto to do the whole transaction."""
        if not isinstance(action, dict) or len(action) != 1:
            return None
        kind, op = next(iter(action.items()))
        allowed = {
            "TableName",
            "ConditionExpression",
            "ExpressionAttributeNames",
            "ExpressionAttributeValues",
            "ReturnValuesOnConditionCheckFailure",
        }
        allowed |= {"Item"} if kind == "Put" else {"Key", "UpdateExpression"} if kind == "Update" else {"Key"}
        if (
            kind not in ("Put", "Update", "Delete", "ConditionCheck")
            or not isinstance(op, dict)
            or not allowed.issuperset(op)
            or (kind == "Update" and not isinstance(op.get("UpdateExpression"), str))
        ):
            return None
        names = op.get("ExpressionAttributeNames", {})
        values = op.get("ExpressionAttributeValues", {})
        condition = expressions.condition(op.get("ConditionExpression"), names, values)
        found = self._table(op.get("TableName"))
        if condition is None or found is None:
            return None
        table, parts = found
        item = None
        taken, update = self._transact_checks(kind, op, table)
        if not taken:
            return None
        used = [*condition.names, *(update.tree.names if update is not None else ())]
        validate_attributes_used(names, used, validation_error_prefix=False)
        if kind == "Put":
            try:
                # moto records a refused put as the action's cancellation reason: let moto.
                item = self._new_item(table, op["Item"])
            except JsonRESTError:
                return None
            if item is None:
                return None
            key: tuple[DynamoType, DynamoType] | None = _key_of(item)
            raw_key = {a: op["Item"][a] for a in table.table_key_attrs}
        else:
            key = self._key(table, op.get("Key"))
            raw_key = op.get("Key", {})
        if key is None:
            return None
        # moto's check that no two actions write one item: on the key as sent.
        target = (str(op["TableName"]), str(dict(sorted(raw_key.items()))))
        return _Step(kind, table, parts, key, op, condition, item, update, target)

    @staticmethod
    def _transact_checks(kind: str, op: dict[str, Any], table: Table) -> tuple[bool, _Update | None]:
        """DynamoHandler's checks of a Put's or an Update's values and key (raised), and an
        Update's expression parsed: whether the fast path takes the action (else moto checks
        it), and the expression."""
        if kind in ("Put", "Update") and op.get("ExpressionAttributeValues") == {}:
            raise ExpressionAttributeValuesEmpty
        if kind == "Put":
            validate_put_has_empty_keys(op["Item"], table)
        if kind != "Update":
            return True, None
        if not isinstance(op.get("Key"), dict):
            return False, None
        validate_put_has_empty_keys(op["Key"], table, custom_error_msg=_BATCH_EMPTY_KEY)
        update = _transact_update_of(table, op)
        return update is not None, update


@dataclass(frozen=True)
class _Update:
    """An Update action's update expression: moto's tree, and the actions of the forms the
    fast path applies itself (`_resolve`), when it is of those forms."""

    tree: expressions.UpdateTree
    actions: list[tuple[str, str, DynamoType | None]] | None


@dataclass(frozen=True)
class _Step:
    """One action of a transaction, checked."""

    kind: str
    table: Table
    parts: partitions.TablePartitions
    key: tuple[DynamoType, DynamoType]
    op: dict[str, Any]
    condition: expressions.Condition
    item: Item | None
    """A Put's item, built."""
    update: _Update | None
    """An Update's expression, parsed."""
    target: tuple[str, str]
    """The table and the key as sent, as moto tells one item from another in a transaction."""


def _transact_update_of(table: Table, op: dict[str, Any]) -> _Update | None:
    text = op["UpdateExpression"]
    tree = expressions.update_tree(text)
    if tree is None:
        return None
    names = op.get("ExpressionAttributeNames") or {}
    values = op.get("ExpressionAttributeValues") or {}
    plan = expressions.update(text.strip()) if text.strip() else None
    actions = None
    if plan is not None and plan.names <= set(names) and plan.values <= set(values):
        actions = _resolve(table, plan, names, values)
    return _Update(tree, actions)


def _transact_update(
    step: _Step, current: Item | None, undo: list[tuple[_Step, Item | None]]
) -> tuple[Any, Any, Any]:
    """DynamoDBBackend.update_item inside a transaction (its condition already checked), on
    the one item: the update's actions applied by the fast path's own steps when they can
    be (`_fits`), else by moto's validator and executor, step for step as moto's
    update_item runs them. The item as it was goes to `undo` (a copy: the live item is
    changed in place, as in moto). A ValidationException is raised; any other error of
    moto's is the action's cancellation reason, as moto records it."""
    assert step.update is not None
    table = step.table
    actions = step.update.actions
    try:
        if actions is not None and _fits(table, step.key, current, actions):
            before = _snapshot(current)
            undo.append((step, before))
            item = _stored_for_update(table, current, step.key)
            _apply(item, actions)
        else:
            before = copy.deepcopy(current)
            item = _moto_update(step, current, undo, before)
    except MockValidationException:
        raise
    except Exception as exc:
        return (type(exc).__name__, str(exc), None)
    finally:
        step.parts.reconcile(table, *step.key)
    _record(table, before, item)
    return (None, None, None)


def _moto_update(
    step: _Step, current: Item | None, undo: list[tuple[_Step, Item | None]], before: Item | None
) -> Item:
    """The steps of DynamoDBBackend.update_item from its validation of the update on."""
    assert step.update is not None
    table, tree = step.table, step.update.tree.tree
    names = step.op.get("ExpressionAttributeNames")  # None when left out, as moto passes it
    values = step.op.get("ExpressionAttributeValues")
    if current is None:
        # moto validates the update on an empty item before it stores one.
        empty = partitions.untracked(Item)
        empty.hash_key, empty.range_key = step.key
        empty.attrs = LimitedSizeDict()
        UpdateExpressionValidator(tree, names, values, empty, table).validate()  # type: ignore[arg-type]
    undo.append((step, before))
    item = _stored_for_update(table, current, step.key)
    validated = UpdateExpressionValidator(tree, names, values, item, table).validate()  # type: ignore[arg-type]
    validated.normalize()
    try:
        UpdateExpressionExecutor(validated, item, names).execute()  # type: ignore[arg-type]
    except ItemSizeTooLarge:
        raise ItemSizeToUpdateTooLarge() from None
    finally:
        # moto changes the item in place: its kept size no longer holds.
        if hasattr(item, partitions.SIZE):
            delattr(item, partitions.SIZE)
    return item


def _stored_for_update(table: Table, current: Item | None, key: tuple[DynamoType, DynamoType]) -> Item:
    """The item an update changes: the stored one, or one of the key alone that moto's
    update_item first stores (with its stream record) when there is none."""
    if current is not None:
        return current
    hash_key, range_key = key
    table.put_item(
        {
            table.hash_key_attr: {hash_key.type: hash_key.value},
            str(table.range_key_attr): {range_key.type: range_key.value},
        }
    )
    item = table.get_item(hash_key, range_key)
    assert item is not None
    return item


def _undo(undo: list[tuple[_Step, Item | None]], shards: dict[str, tuple[Any, int]]) -> None:
    """Put back what a transaction's writes replaced, and drop their stream records."""
    for step, previous in reversed(undo):
        hash_key, range_key = step.key
        if previous is None:
            step.table.items[hash_key].pop(range_key, None)
        else:
            step.table.items[hash_key][range_key] = previous
        step.parts.reconcile_item(hash_key, range_key, previous)
    for shard, length in shards.values():
        del shard.items[length:]


def _duplicates(requests: list[dict[str, Any]]) -> bool:
    """DynamoHandler's check of a batch for duplicates (the same JSON twice), made only among
    requests whose first two attributes (the key, usually) are the same: others differ."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    for request in requests:
        by_key.setdefault(repr(list(request.items())[:2]), []).append(request)
    return any(
        len(group) > 1 and len({dynamo_json_dump(r) for r in group}) < len(group) for group in by_key.values()
    )


def _has_timestamp(shape: Any, seen: set[str]) -> bool:
    if shape is None or shape.name in seen:
        return False
    seen.add(shape.name)
    if shape.type_name == "timestamp":
        return True
    if shape.type_name == "structure":
        return any(_has_timestamp(member, seen) for member in shape.members.values())
    if shape.type_name == "list":
        return _has_timestamp(shape.member, seen)
    if shape.type_name == "map":
        return _has_timestamp(shape.value, seen)
    return False


def _key_of(item: Item) -> tuple[DynamoType, DynamoType]:
    """An item's primary key (the fast path only serves tables with a sort key)."""
    assert item.range_key is not None
    return item.hash_key, item.range_key


def _typed(raw: Any, expected: str) -> DynamoType | None:
    if not isinstance(raw, dict) or len(raw) != 1 or expected not in raw:
        return None
    value = raw[expected]
    if expected == "S" and (not isinstance(value, str) or not value):
        return None
    if expected == "N" and (not isinstance(value, str) or not _NUMBER.fullmatch(value)):
        return None
    if expected == "B" and (not isinstance(value, bytes) or not value):
        return None
    return DynamoType(raw)


def _typed_keys(table: Table, attrs: Mapping[str, Any]) -> tuple[DynamoType, DynamoType] | None:
    hash_key = _typed(attrs.get(table.hash_key_attr), table.hash_key_type)
    range_key = _typed(attrs.get(table.range_key_attr or ""), table.range_key_type or "")
    return None if hash_key is None or range_key is None else (hash_key, range_key)


def _plain(value: Any) -> bool:
    """An attribute value of the usual shapes (the fast path leaves odd ones to moto)."""
    return _bound(value) >= 0


def _bound(value: Any) -> int:
    """At least the size moto measures for an attribute value of the usual shapes (a string
    takes at most 4 bytes a character); -1 for any other value."""
    if not isinstance(value, dict) or len(value) != 1:
        return -1
    kind, inner = next(iter(value.items()))
    measure = _BOUNDS.get(kind)
    return -1 if measure is None else measure(inner)


def _item_bound(attrs: Any) -> int:
    """`_bound` of an item (or a map): its names and values."""
    if not isinstance(attrs, dict):
        return -1
    total = 0
    for name, value in attrs.items():
        found = _bound(value)
        if found < 0 or not isinstance(name, str):
            return -1
        total += 4 * len(name) + found
    return total


def _list_bound(elements: Any) -> int:
    """`_bound` of a list's elements."""
    if not isinstance(elements, list):
        return -1
    total = 0
    for element in elements:
        found = _bound(element)
        if found < 0:
            return -1
        total += found
    return total


_BOUNDS: dict[str, Callable[[Any], int]] = {
    # type -> the bound of its inner value (-1 for a value of another shape)
    "S": lambda inner: 4 * len(inner) if isinstance(inner, str) else -1,
    "N": lambda inner: len(inner) if isinstance(inner, str) and _NUMBER.fullmatch(inner) else -1,
    "B": lambda inner: len(inner) if isinstance(inner, bytes) else -1,
    "BOOL": lambda inner: 1 if isinstance(inner, bool) else -1,
    "NULL": lambda inner: 1 if inner is True else -1,
    "M": _item_bound,
    "L": _list_bound,
}


def _resolve(
    table: Table, plan: expressions.Update, names: dict[str, str], values: dict[str, Any]
) -> list[tuple[str, str, DynamoType | None]] | None:
    """The update's actions on attribute names, with their values; None when moto would refuse
    them or do more than is done here (overlapping paths, the table's key, a key attribute set
    to an empty or mistyped value, ADD of anything but a plain number)."""
    key_types = {a["AttributeName"]: a["AttributeType"] for a in table.attr}
    resolved: list[tuple[str, str, DynamoType | None]] = []
    for action in plan.actions:
        name = names[action.path] if action.path.startswith("#") else action.path
        raw = values.get(action.value) if action.value is not None else None
        if action.value is not None and not _plain(raw):
            return None
        value = partitions.dynamo(raw) if raw is not None else None
        if name in table.table_key_attrs:
            return None
        if action.kind == "SET" and name in key_types:
            assert value is not None
            if value.type != key_types[name] or not value.value:
                return None
        if action.kind == "ADD" and (value is None or value.type != "N"):
            return None
        resolved.append((action.kind, name, value))
    if len({name for _, name, _ in resolved}) != len(resolved):
        return None
    return resolved


def _fits(
    table: Table,
    key: tuple[DynamoType, DynamoType],
    item: Item | None,
    actions: list[tuple[str, str, DynamoType | None]],
) -> bool:
    """Whether moto would apply these actions without refusing one: ADD only to a number, and
    the item never over moto's size limit on the way (bounded from above)."""
    attrs = item.attrs if item is not None else {}
    bound = (
        partitions.size(item)
        if item is not None
        else sum(bytesize(n) + k.size() for n, k in zip(table.table_key_attrs, key, strict=True))
    )
    for kind, name, value in actions:
        if kind == "REMOVE":
            continue
        assert value is not None
        bound += bytesize(name) + value.size()
        if kind == "ADD":
            existing = attrs.get(name)
            if existing is not None and (existing.type != "N" or not _NUMBER.fullmatch(existing.value)):
                return False
            bound += (existing.size() if existing is not None else 1) + 1
    return bound <= partitions.MAX_ITEM_SIZE


def _record(table: Table, old: Item | None, new: Item | None) -> None:
    """StreamShard.add(old, new) and its StreamRecord, built as moto builds them, with the
    images built by `_attributes` (what Item.to_json gives, in copies of their own)."""
    shard = table.stream_shard
    if shard is None:
        return
    if table.lambda_event_source_mappings or (old is None and new is None):
        shard.add(old, new)
        return
    view = table.stream_specification["StreamViewType"]  # type: ignore[index]
    event = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
    sequence = len(shard.items) + shard.starting_sequence_number
    keyed = old if old is not None else new
    assert keyed is not None
    keys = {table.hash_key_attr: keyed.hash_key.to_json()}
    if table.range_key_attr is not None:
        keys[table.range_key_attr] = keyed.range_key.to_json()  # type: ignore[union-attr]
    data: dict[str, Any] = {
        "StreamViewType": view,
        "ApproximateCreationDateTime": utcnow(),
        "SequenceNumber": str(sequence),
        "SizeBytes": 1,
        "Keys": keys,
    }
    if view in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES") and new is not None:
        data["NewImage"] = _attributes(new)
    if view in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES") and old is not None:
        data["OldImage"] = _attributes(old)
    data["SizeBytes"] = len(dynamo_json_dump(data))
    record = partitions.untracked(StreamRecord)
    record.record = {
        "eventID": mock_random.uuid4().hex,
        "eventName": event,
        "eventSource": "aws:dynamodb",
        "eventVersion": "1.0",
        "awsRegion": "us-east-1",
        "dynamodb": data,
    }
    shard.items.append(record)


def _apply(item: Item, actions: list[tuple[str, str, DynamoType | None]]) -> None:
    """moto's executors for these actions (SetExecutor, RemoveExecutor, AddExecutor of a
    number), keeping the item's measured size up to date as they go."""
    measured = partitions.size(item)
    attrs = item.attrs
    for kind, name, value in actions:
        old = attrs.get(name)
        if old is not None:
            measured -= bytesize(name) + old.size()
        if kind == "REMOVE":
            if old is not None:
                dict.__delitem__(attrs, name)
            continue
        assert value is not None
        new = value if kind == "SET" else (old if old is not None else DynamoType({"N": "0"})) + value
        dict.__setitem__(attrs, name, new)
        measured += bytesize(name) + new.size()
    setattr(item, partitions.SIZE, measured)


def _attributes(item: Item) -> dict[str, Any]:
    """dynamo_to_dict(item.to_json()["Attributes"]): what moto answers for an item."""
    out: dict[str, Any] = {}
    for name, value in item.attrs.items():
        inner = value.value
        if isinstance(inner, dict | list):
            out[name] = _regular(value)
        else:
            out[name] = {value.type: inner}
    return out


def _regular(value: DynamoType) -> dict[str, Any]:
    """DynamoType.to_regular_json() (a deep copy in plain values), without copy.deepcopy."""
    inner = value.value
    if isinstance(inner, dict):
        inner = {k: _regular(v) if isinstance(v, DynamoType) else copy.deepcopy(v) for k, v in inner.items()}
    elif isinstance(inner, list):
        inner = [_regular(v) if isinstance(v, DynamoType) else copy.deepcopy(v) for v in inner]
    elif value.type == "B" and isinstance(inner, str):
        inner = base64.b64decode(inner)
    return {value.type: inner}


def _moto_dict(value: Any) -> Any:
    """dynamo_to_dict(value) (moto's answer for a DynamoType), for the values of items."""
    if isinstance(value, DynamoType):
        kind, inner = value.type, value.value
        if kind == "B":
            return {"B": inner if isinstance(inner, bytes) else base64.b64decode(inner)}
        if kind == "BS":
            return {"BS": [v if isinstance(v, bytes) else base64.b64decode(v) for v in inner]}
        if isinstance(inner, str | bool):
            return {kind: inner}
        return {kind: _moto_dict(inner)}
    if isinstance(value, dict):
        return {k: _moto_dict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_moto_dict(v) for v in value]
    if isinstance(value, str | bytes | bool | int | float) or value is None:
        return value
    return dynamo_to_dict(value)


def _snapshot(item: Item | None) -> Item | None:
    """The item as it stands, for its stream record. moto deep-copies it; a shallow copy of its
    attributes is as good here, as the fast path replaces attribute values, never changes one."""
    if item is None:
        return None
    snapshot = partitions.untracked(Item)
    snapshot.hash_key, snapshot.range_key = item.hash_key, item.range_key
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.update(attrs, item.attrs)
    snapshot.attrs = attrs
    return snapshot
