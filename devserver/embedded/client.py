"""A DynamoDB client that calls moto's backend directly, without botocore in between.

One boto3 call into moto costs about 2 ms of request building, signing, serializing and
parsing before moto does anything; moto then parses each expression again on every call,
builds each item attribute by attribute re-measuring the whole item each time, and copies
whole tables for a transaction. Here:

- Every call goes to moto's own request handler (moto.dynamodb.responses.DynamoHandler) with
  the request as boto3 would have sent it, and its answer comes back as boto3 would have
  parsed it: the same validation, the same errors.
- The calls the store makes most (PutItem, UpdateItem, DeleteItem, BatchWriteItem,
  TransactWriteItems) are done here instead, step for step as moto's handler and backend
  do them and with moto's own pieces (its conditions, items, errors and stream shard), with
  each expression parsed once per shape (`expressions`), each item built once, and a
  transaction undone item by item instead of by restoring a copy of each table. A request
  of any other shape than handled here goes to moto's handler, which answers it.
- Queries are moto's, answered from per-partition lookups (`partitions`).

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
from decimal import Decimal
from typing import Any

import boto3
from botocore.awsrequest import HeadersDict
from botocore.exceptions import ClientError
from botocore.parsers import create_parser
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionContext
from moto.core.serialize import get_serializer_class
from moto.core.utils import get_service_model
from moto.dynamodb.comparisons import Func, Op
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    ExpressionAttributeValuesEmpty,
    TransactionCanceledException,
)
from moto.dynamodb.models import DynamoDBBackend, dynamodb_backends
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table
from moto.dynamodb.models.utilities import bytesize, dynamo_json_dump, dynamo_to_dict
from moto.dynamodb.responses import (
    DynamoHandler,
    validate_attributes_used,
    validate_put_has_empty_attrs,
    validate_put_has_empty_keys,
    validate_put_has_gsi_keys_set_to_none,
)

from devserver.embedded import expressions, partitions

_DEFER = object()
"""A fast path's answer when the request is not of a shape it handles: moto's handler answers."""
_NUMBER = re.compile(r"-?[0-9]{1,38}(\.[0-9]{1,38})?")
_UPDATE_CAPACITY = 0.5
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


class DirectDynamoDB:
    """The DynamoDB calls of boto3's client, answered by moto's backend in this process."""

    def __init__(self, region: str, account_id: str = DEFAULT_ACCOUNT_ID) -> None:
        self.region = region
        self.account_id = account_id
        # A real client only for its API model and its exception classes (never called).
        model_client = boto3.client(
            "dynamodb", region_name=region, aws_access_key_id="local", aws_secret_access_key="local"
        )
        self._model = model_client.meta.service_model
        self._exceptions = model_client.exceptions
        self._parser = create_parser("json")
        self._handler = DynamoHandler()
        self._handler.current_account = account_id
        self._handler.region = region
        self._fast: dict[str, Callable[[dict[str, Any]], Any]] = {
            "PutItem": self._put_item,
            "UpdateItem": self._update_item,
            "DeleteItem": self._delete_item,
            "BatchWriteItem": self._batch_write_item,
            "TransactWriteItems": self._transact_write_items,
        }
        self._dates: dict[str, bool] = {}
        self._operations = {_SNAKE.sub("_", name).lower(): name for name in self._model.operation_names}

    @property
    def backend(self) -> DynamoDBBackend:
        return dynamodb_backends[self.account_id][self.region]  # type: ignore[no-any-return]

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
            {table.hash_key_attr: {h.type: h.value}, table.range_key_attr: {r.type: r.value}} for h, r in keys
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
            raise self._client_error(operation, exc) from None
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
        operation_model = get_service_model("dynamodb").operation_model(operation)
        context = ActionContext(
            get_service_model("dynamodb"), operation_model, get_serializer_class("dynamodb", "json"), handler
        )
        status, headers, body = result.execute_result(context)
        response = {"status_code": status, "headers": HeadersDict(headers), "body": body.encode()}
        parsed = self._parser.parse(response, self._model.operation_model(operation).output_shape)
        parsed.pop("ResponseMetadata", None)
        return parsed

    def _dated(self, operation: str) -> bool:
        if operation not in self._dates:
            self._dates[operation] = _has_timestamp(
                self._model.operation_model(operation).output_shape, set()
            )
        return self._dates[operation]

    def _shaped(self, operation: str, answer: Any) -> dict[str, Any]:
        """The answer as botocore's parser gives it: only the members of the operation's output,
        and none that moto left empty (None)."""
        shape = self._model.operation_model(operation).output_shape
        if shape is None or not isinstance(answer, dict):
            return {}
        members = shape.members
        return {k: v for k, v in answer.items() if k in members and v is not None}

    def _client_error(self, operation: str, exc: JsonRESTError) -> ClientError:
        """moto's error response parsed as botocore parses it (endpoint._add_modeled_error_fields
        included), as the client's modeled exception."""
        headers = HeadersDict(dict(exc.get_headers()))
        response = {"status_code": exc.code, "headers": headers, "body": exc.get_body().encode()}
        operation_model = self._model.operation_model(operation)
        parsed: dict[str, Any] = self._parser.parse(response, operation_model.output_shape)
        code = parsed.get("Error", {}).get("Code")
        error_shape = self._model.shape_for_error_code(code) if code else None
        if error_shape is not None:
            parsed.update(self._parser.parse(response, error_shape))
        error_class = self._exceptions.from_code(code)
        return error_class(parsed, operation)  # type: ignore[no-any-return]

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
        if keys is None or not _plain_item(attrs):
            return None
        table._validate_item_types(attrs)
        table._validate_key_sizes(attrs)
        # Item() refuses an item over its limit as it adds the attribute that passes it: the
        # same limit, measured once at the end (the measure only grows).
        item = partitions.build_item(*keys, attrs)
        if partitions.size(item) > partitions.MAX_ITEM_SIZE:
            return None
        return item

    @staticmethod
    def _store(table: Table, parts: partitions.TablePartitions, item: Item, current: Item | None) -> None:
        """The end of Table.put_item: the item in place, its stream record."""
        table.items[item.hash_key][item.range_key] = item
        parts.reconcile_item(item.hash_key, item.range_key, item)
        if table.stream_shard is not None:
            table.stream_shard.add(current, item)

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
        if item is None:
            hash_key, range_key = key
            table.put_item(
                {
                    table.hash_key_attr: {hash_key.type: hash_key.value},
                    table.range_key_attr: {range_key.type: range_key.value},
                }
            )
            item = table.get_item(hash_key, range_key)
        assert item is not None
        _apply(item, actions)
        parts.reconcile_item(item.hash_key, item.range_key, item)
        if table.stream_shard is not None:
            table.stream_shard.add(before, item)
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

    # -- BatchWriteItem -------------------------------------------------------------------

    def _batch_write_item(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.batch_write_item: every put, then every delete."""
        batches = params.get("RequestItems")
        if set(params) != {"RequestItems"} or not isinstance(batches, dict):
            return _DEFER
        puts: list[tuple[Table, partitions.TablePartitions, dict[str, Any]]] = []
        deletes: list[tuple[Table, dict[str, Any]]] = []
        for table_name, requests in batches.items():
            found = self._table(table_name)
            if found is None:
                return _DEFER
            table, parts = found
            for request in requests:
                if not isinstance(request, dict) or len(request) != 1:
                    return _DEFER
                kind, body = next(iter(request.items()))
                if kind == "PutRequest":
                    validate_put_has_empty_keys(
                        body["Item"],
                        table,
                        custom_error_msg="One or more parameter values are not valid. The AttributeValue "
                        "for a key attribute cannot contain an empty string value. Key: {}",
                    )
                    puts.append((table, parts, body["Item"]))
                elif kind == "DeleteRequest":
                    deletes.append((table, body["Key"]))
                else:
                    return _DEFER
        if self._handler._contains_duplicates(
            [dynamo_json_dump(k[1]) for k in deletes]
        ) or self._handler._contains_duplicates([dynamo_json_dump(p[2]) for p in puts]):
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

    # -- TransactWriteItems ---------------------------------------------------------------

    def _transact_write_items(self, params: dict[str, Any]) -> Any:
        """DynamoHandler.transact_write_items -> DynamoDBBackend.transact_write_items for Put,
        Delete and ConditionCheck. moto keeps a deep copy of each table a transaction touches
        to restore if it is cancelled (and `keep_streams_through_rollbacks` then puts the live
        stream shard back); here each write keeps the item it replaced instead."""
        actions = params.get("TransactItems")
        if set(params) != {"TransactItems"} or not isinstance(actions, list) or len(actions) > 100:
            return _DEFER
        steps = []
        for action in actions:
            step = self._transact_step(action)
            if step is None:
                return _DEFER
            steps.append(step)
        targets = [(s[1].name, s[3]) for s in steps]
        if len({(name, key[0], key[1]) for name, key in targets}) != len(targets):
            return _DEFER  # moto's MultipleTransactionsException, with its own rollback
        shards = {
            s[1].name: (s[1], len(s[1].stream_shard.items)) for s in steps if s[1].stream_shard is not None
        }
        undo: list[tuple[Table, partitions.TablePartitions, tuple[DynamoType, DynamoType], Item | None]] = []
        errors: list[tuple[Any, Any, Any]] = []
        for kind, table, parts, key, op, condition, item in steps:
            current = table.get_item(*key)
            original: dict[str, Any] | None = None
            try:
                if op.get("ConditionExpression") is not None:
                    tree = condition.bind(op.get("ExpressionAttributeValues"))
                    if not tree.expr(current):
                        if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                            original = current.to_json()["Attributes"]
                        raise ConditionalCheckFailed(item=original)
                if kind == "Put":
                    undo.append((table, parts, key, current))
                    self._store(table, parts, item, current)
                elif kind == "Delete":
                    undo.append((table, parts, key, current))
                    table.delete_item(*key)
                errors.append((None, None, None))
            except ConditionalCheckFailed as exc:
                errors.append(("ConditionalCheckFailed", str(exc.message), original))
        if any(code is not None for code, _, _ in errors):
            for table, parts, (hash_key, range_key), previous in reversed(undo):
                if previous is None:
                    table.items[hash_key].pop(range_key, None)
                else:
                    table.items[hash_key][range_key] = previous
                parts.reconcile_item(hash_key, range_key, previous)
            for table, length in shards.values():
                del table.stream_shard.items[length:]
            raise TransactionCanceledException(errors)
        return {"ConsumedCapacity": [], "ItemCollectionMetrics": {}}

    def _transact_step(self, action: Any) -> tuple[Any, ...] | None:
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
        }
        allowed |= {"ReturnValuesOnConditionCheckFailure", "Item" if kind == "Put" else "Key"}
        if (
            kind not in ("Put", "Delete", "ConditionCheck")
            or not isinstance(op, dict)
            or not allowed.issuperset(op)
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
        if kind == "Put":
            if op.get("ExpressionAttributeValues") == {}:
                raise ExpressionAttributeValuesEmpty
            validate_put_has_empty_keys(op["Item"], table)
        validate_attributes_used(names, list(condition.names), validation_error_prefix=False)
        if kind == "Put":
            try:
                # moto records a refused put as the action's cancellation reason: let moto.
                item = self._new_item(table, op["Item"])
            except JsonRESTError:
                return None
            if item is None:
                return None
            key: tuple[DynamoType, DynamoType] | None = (item.hash_key, item.range_key)
        else:
            key = self._key(table, op.get("Key"))
        if key is None:
            return None
        return kind, table, parts, key, op, condition, item


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
    if not isinstance(value, dict) or len(value) != 1:
        return False
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return isinstance(inner, str)
    if kind == "N":
        return isinstance(inner, str) and _NUMBER.fullmatch(inner) is not None
    if kind == "B":
        return isinstance(inner, bytes)
    if kind == "BOOL":
        return isinstance(inner, bool)
    if kind == "NULL":
        return inner is True
    if kind == "M":
        return _plain_item(inner)
    if kind == "L":
        return isinstance(inner, list) and all(_plain(v) for v in inner)
    return False


def _plain_item(attrs: Any) -> bool:
    return isinstance(attrs, dict) and all(isinstance(k, str) and _plain(v) for k, v in attrs.items())


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
        value = DynamoType(raw) if raw is not None else None
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
    item.__dict__[partitions.SIZE] = measured


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


def _snapshot(item: Item | None) -> Item | None:
    """The item as it stands, for its stream record. moto deep-copies it; a shallow copy of its
    attributes is as good here, as the fast path replaces attribute values, never changes one."""
    if item is None:
        return None
    snapshot = Item.__new__(Item)
    snapshot.hash_key, snapshot.range_key = item.hash_key, item.range_key
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.update(attrs, item.attrs)
    snapshot.attrs = attrs
    return snapshot
