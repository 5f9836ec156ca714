"""DynamoDB capacity-unit calculator and a meter for boto3 DynamoDB clients.

Why this exists: moto's ``ReturnConsumedCapacity`` figures are fixed per
operation (a 3 KB PutItem reports 1.0, every UpdateItem 0.5), so the benchmark
cannot read its costs from the service it runs against. Instead it computes
write request units (WRU), read request units (RRU) and call counts itself, from
the size of every item each request writes or reads, under the rules AWS
publishes. One WRU/RRU on an on-demand table is the same quantity as one
WCU/RCU on a provisioned table, so the figures serve both billing modes.

Sources (AWS developer guide unless noted; read November 2026):

- Item sizes: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html
- Read and write units per operation, conditional-write failures:
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
- Global secondary indexes (index-entry reads, the write rules, entry size):
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations
  and https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.StorageConsiderations
- Local secondary indexes follow the same write rules:
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LSI.html#LSI.ThroughputConsiderations
- Transactions ("two underlying reads or writes of every item"):
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling

Where the documentation is silent, the rule used is marked SECONDARY in the
code together with its source (measurements of real DynamoDB published by
third parties), or ESTIMATE when nothing better was found.

Deliberate simplifications (each stated where it is applied):

- Storage overheads (100 bytes per item and per index entry) are billed as
  storage, not as capacity, and are left out of item sizes.
- Query and Scan also charge "based on ... the number of partitions searched",
  which cannot be seen from a client; that part is not modelled.
- A failed conditional UpdateItem is sized on the existing item: the documented
  rule also counts the would-be new item, which only the server computes.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import botocore.session
from botocore.exceptions import ClientError

__all__ = [
    "READ_UNIT_BYTES",
    "TRANSACTION_FACTOR",
    "WRITE_UNIT_BYTES",
    "AttributeValue",
    "CapacityMeter",
    "IndexSpec",
    "Item",
    "MeteredCall",
    "TableSpec",
    "Usage",
    "attribute_value_size",
    "index_entry",
    "index_write_units",
    "item_size",
    "item_write_units",
    "read_units",
    "write_units",
]

AttributeValue = dict[str, Any]
"""A low-level typed DynamoDB value, e.g. ``{"S": "x"}`` or ``{"N": "12"}``."""

Item = Mapping[str, AttributeValue]
"""An item as the low-level client sends and returns it: name -> typed value."""

WRITE_UNIT_BYTES = 1024
"""One write unit covers one write of up to 1 KB (read-write-operations.html)."""

READ_UNIT_BYTES = 4096
"""One read unit covers one strongly consistent read of up to 4 KB."""

TRANSACTION_FACTOR = 2
"""Transactions do "two underlying reads or writes of every item" (transaction-apis.html)."""

CONDITIONAL_CHECK_FAILED = "ConditionalCheckFailedException"
TRANSACTION_CANCELED = "TransactionCanceledException"


# --------------------------------------------------------------------------
# Item sizes  (CapacityUnitCalculations.html)
# --------------------------------------------------------------------------


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _number_size(text: str) -> int:
    """Size of a DynamoDB number: 1 byte per two significant digits, plus 1.

    "Numbers are variable length, with up to 38 significant digits. Leading and
    trailing zeroes are trimmed. The size of a number is approximately ...
    (1 byte per two significant digits) + (1 byte)." The sign and any exponent
    are not digits; AWS gives no extra byte for a negative number, so none is
    added (the page calls the formula approximate).
    """
    mantissa = text.strip().lstrip("+-").lower().partition("e")[0]
    significant = mantissa.replace(".", "").strip("0")
    return (len(significant) + 1) // 2 + 1


def _raw_bytes_len(payload: Any) -> int:
    """Raw length of a binary value; AWS sizes binaries before base64 encoding.

    botocore sends a ``str`` given for a binary as its UTF-8 bytes, so that is
    its raw length too.
    """
    if isinstance(payload, str):
        return _utf8_len(payload)
    return len(bytes(payload))


def _one_byte(_: Any) -> int:
    return 1


_SCALAR_SIZE: dict[str, Callable[[Any], int]] = {
    "S": _utf8_len,
    "N": _number_size,
    "B": _raw_bytes_len,
    "NULL": _one_byte,
    "BOOL": _one_byte,
}
_SET_MEMBER_TYPE = {"SS": "S", "NS": "N", "BS": "B"}


def attribute_value_size(value: AttributeValue) -> int:
    """Bytes a typed value adds to an item, excluding its attribute name.

    Rules from CapacityUnitCalculations.html: strings count their UTF-8 bytes;
    numbers ``ceil(significant digits / 2) + 1``; binaries their raw bytes; null
    and Boolean 1 byte; a List or Map 3 bytes of overhead plus its elements,
    each element 1 more byte, a Map element also the UTF-8 bytes of its key
    (keys count like attribute names). The page says nothing specific about
    sets; a set is sized as the sum of its members' sizes.
    """
    if len(value) != 1:
        raise ValueError(f"expected exactly one type tag, got {sorted(value)}")
    ((tag, payload),) = value.items()
    if tag in _SCALAR_SIZE:
        return _SCALAR_SIZE[tag](payload)
    if tag in _SET_MEMBER_TYPE:
        member_size = _SCALAR_SIZE[_SET_MEMBER_TYPE[tag]]
        return sum(member_size(member) for member in payload)
    if tag == "L":
        return 3 + sum(attribute_value_size(element) + 1 for element in payload)
    if tag == "M":
        return 3 + sum(_utf8_len(key) + attribute_value_size(element) + 1 for key, element in payload.items())
    raise ValueError(f"unknown DynamoDB type tag {tag!r}")


def item_size(item: Item) -> int:
    """Size of an item: the UTF-8 bytes of every attribute name plus its value.

    "The total size of an item is the sum of the lengths of its attribute names
    and values" (CapacityUnitCalculations.html). The 100 bytes of per-item
    overhead on that page are storage overhead, not capacity, so they are not
    included.
    """
    return sum(_utf8_len(name) + attribute_value_size(value) for name, value in item.items())


def _size_or_zero(item: Item | None) -> int:
    return 0 if item is None else item_size(item)


def write_units(size_bytes: int) -> int:
    """Write units for one write of ``size_bytes``: 1 per started KB, at least 1.

    "Item sizes for writes are rounded up to the next 1 KB multiple. For example,
    writing a 500-byte item consumes the same throughput as writing a 1 KB item."
    A write that touches no bytes (deleting a missing item, a failed condition
    on a missing item) still costs the minimum of one unit.
    """
    return max(1, -(-size_bytes // WRITE_UNIT_BYTES))


def read_units(size_bytes: int, *, consistent: bool) -> float:
    """Read units for reading ``size_bytes`` at once: 1 per started 4 KB, at least 1.

    "Item sizes for reads are rounded up to the next 4 KB multiple"; an
    eventually consistent read costs half. A read of nothing (a missing item, an
    empty Query) still costs the minimum: "If you perform a read operation on
    an item that doesn't exist, DynamoDB will still consume read throughput".
    Transactional reads are twice the strongly consistent figure; callers
    multiply by :data:`TRANSACTION_FACTOR`.
    """
    units = max(1, -(-size_bytes // READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


def item_write_units(before: Item | None, after: Item | None) -> int:
    """Base-table write units for changing one item from ``before`` to ``after``.

    PutItem replacing an item: "the item size that matters is the larger of the
    two"; UpdateItem: "the larger of the 'before' and 'after' item sizes";
    DeleteItem: "the size of the deleted item". With neither image (deleting a
    missing item, or a failed condition on a missing item) the minimum of 1.
    """
    return write_units(max(_size_or_zero(before), _size_or_zero(after)))


# --------------------------------------------------------------------------
# Tables and secondary indexes  (GSI.html, LSI.html)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSpec:
    """What the calculator needs to know about one secondary index.

    ``projection`` is DynamoDB's ``ProjectionType``: ``"ALL"``, ``"KEYS_ONLY"``
    or ``"INCLUDE"`` (then ``non_key_attributes`` lists the extra names).
    ``local`` marks a local secondary index, whose partition key is the table's.
    """

    name: str
    hash_key: str
    range_key: str | None
    projection: str
    non_key_attributes: tuple[str, ...] = ()
    local: bool = False

    @property
    def key_names(self) -> tuple[str, ...]:
        """The index's own key attributes, partition key first."""
        return (self.hash_key,) if self.range_key is None else (self.hash_key, self.range_key)


def _key_schema(schema: Sequence[Mapping[str, Any]], owner: str) -> tuple[str, str | None]:
    hashes = [element["AttributeName"] for element in schema if element["KeyType"] == "HASH"]
    ranges = [element["AttributeName"] for element in schema if element["KeyType"] == "RANGE"]
    if len(hashes) != 1 or len(ranges) > 1:
        # Multi-attribute GSI keys (up to four HASH and four RANGE attributes)
        # exist since 2025; the calculator does not model them.
        raise ValueError(f"{owner}: multi-attribute key schemas are not supported: {schema}")
    return hashes[0], (ranges[0] if ranges else None)


def _index_spec(description: Mapping[str, Any], *, local: bool) -> IndexSpec:
    name = description["IndexName"]
    hash_key, range_key = _key_schema(description["KeySchema"], name)
    projection = description.get("Projection", {})
    return IndexSpec(
        name=name,
        hash_key=hash_key,
        range_key=range_key,
        projection=projection.get("ProjectionType", "ALL"),
        non_key_attributes=tuple(projection.get("NonKeyAttributes", ())),
        local=local,
    )


@dataclass(frozen=True)
class TableSpec:
    """A table's primary key and its secondary indexes."""

    name: str
    hash_key: str
    range_key: str | None
    indexes: tuple[IndexSpec, ...] = ()

    @classmethod
    def from_description(cls, description: Mapping[str, Any]) -> TableSpec:
        """Build from the ``"Table"`` member of a DescribeTable response."""
        hash_key, range_key = _key_schema(description["KeySchema"], description["TableName"])
        indexes = tuple(
            _index_spec(index, local=False) for index in description.get("GlobalSecondaryIndexes", ())
        ) + tuple(_index_spec(index, local=True) for index in description.get("LocalSecondaryIndexes", ()))
        return cls(description["TableName"], hash_key, range_key, indexes)

    @property
    def key_names(self) -> tuple[str, ...]:
        """The table's primary-key attributes, partition key first."""
        return (self.hash_key,) if self.range_key is None else (self.hash_key, self.range_key)

    def key_of(self, item: Item) -> dict[str, AttributeValue]:
        """The primary key of ``item``, as GetItem's ``Key`` wants it."""
        return {name: dict(item[name]) for name in self.key_names}

    def index(self, name: str) -> IndexSpec:
        """The index called ``name``; KeyError if the table has none such."""
        for index in self.indexes:
            if index.name == name:
                return index
        raise KeyError(f"table {self.name} has no index {name}")


def index_entry(item: Item | None, table: TableSpec, index: IndexSpec) -> dict[str, Any] | None:
    """The entry ``item`` projects into ``index``, or None if it has none.

    "A global secondary index only tracks data items where its key attributes
    actually exist" (GSI.html): an item lacking the index partition key, or its
    sort key when it has one, is absent from the (sparse) index. An entry holds
    the table's primary key and the index key ("always projected"), plus every
    attribute for ``ALL`` or the named ones for ``INCLUDE``. GSI.html sizes an
    index item as table key + index key + projected attributes; its extra 100
    bytes are storage overhead and are not counted here.
    """
    if item is None or any(name not in item for name in index.key_names):
        return None
    if index.projection == "ALL":
        return dict(item)
    names = set(table.key_names) | set(index.key_names)
    if index.projection == "INCLUDE":
        names |= set(index.non_key_attributes)
    return {name: value for name, value in item.items() if name in names}


def index_write_units(before: Item | None, after: Item | None, table: TableSpec) -> int:
    """Index write units for changing one item from ``before`` to ``after``.

    Summed over every index, by the rules in GSI.html (LSI.html states the same):

    - entry in neither image: 0 ("no additional write cost for the index");
    - entry appears (new item, or an update defines the index key): 1 write;
    - entry disappears (delete, or the index key is removed): 1 write;
    - index key value changes: 2 writes, "one to delete the previous item from
      the index and another write to put the new item into the index";
    - only projected non-key attributes change: 1 write; no projected change: 0.

    "Larger index entries require additional write capacity units", so each
    write is sized on its entry and rounded to 1 KB like any write; a changed
    entry is sized on the larger of its old and new forms, as UpdateItem is.
    """
    total = 0
    for index in table.indexes:
        old = index_entry(before, table, index)
        new = index_entry(after, table, index)
        if old is None and new is None:
            continue
        if old is None:
            assert new is not None
            total += write_units(item_size(new))
        elif new is None:
            total += write_units(item_size(old))
        elif _canonical_key(old, index.key_names) != _canonical_key(new, index.key_names):
            total += write_units(item_size(old)) + write_units(item_size(new))
        elif _canonical_item(old) != _canonical_item(new):
            total += write_units(max(item_size(old), item_size(new)))
    return total


def _canonical_value(value: AttributeValue) -> Any:
    """A hashable form of a typed value in which equal DynamoDB values are equal.

    Numbers compare by value ("1" == "1.0"), sets ignore member order.
    """
    ((tag, payload),) = value.items()
    if tag in _SET_MEMBER_TYPE:
        member = _CANONICAL_SCALAR[_SET_MEMBER_TYPE[tag]]
        return (tag, frozenset(member(element) for element in payload))
    if tag == "L":
        return (tag, tuple(_canonical_value(element) for element in payload))
    if tag == "M":
        return (tag, _canonical_item(payload))
    return (tag, _CANONICAL_SCALAR.get(tag, _same)(payload))


def _same(payload: Any) -> Any:
    return payload


def _canonical_number(text: str) -> Decimal | str:
    try:
        return Decimal(text).normalize()
    except InvalidOperation:
        return text


def _canonical_bytes(payload: Any) -> bytes:
    return payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)


_CANONICAL_SCALAR: dict[str, Callable[[Any], Any]] = {"N": _canonical_number, "B": _canonical_bytes}


def _canonical_item(item: Item) -> frozenset[tuple[str, Any]]:
    return frozenset((name, _canonical_value(value)) for name, value in item.items())


def _canonical_key(item: Item, names: Iterable[str]) -> tuple[Any, ...]:
    return tuple(_canonical_value(item[name]) for name in names)


# --------------------------------------------------------------------------
# Usage and the client meter
# --------------------------------------------------------------------------


@dataclass
class Usage:
    """Units and calls a metered client has used since attach or reset.

    ``by_operation`` maps an operation name (``"PutItem"``) to
    ``{"calls": n, "write_units": w, "read_units": r}``.
    """

    write_units: float = 0.0
    read_units: float = 0.0
    calls: int = 0
    by_operation: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, operation: str, *, write: float = 0.0, read: float = 0.0, calls: int = 1) -> None:
        """Record one call of ``operation`` and the units it consumed."""
        self.write_units += write
        self.read_units += read
        self.calls += calls
        entry = self.by_operation.setdefault(operation, {"calls": 0, "write_units": 0.0, "read_units": 0.0})
        entry["calls"] += calls
        entry["write_units"] += write
        entry["read_units"] += read


@dataclass(frozen=True)
class MeteredCall:
    """One finished call as the meter saw it, for a listener that splits it further.

    ``before`` holds the before-images the meter read, in the order of the request's
    writes (empty for reads); ``write_units`` and ``read_units`` are the meter's charge.
    """

    operation: str
    params: Mapping[str, Any]
    before: Sequence[Item | None]
    response: Mapping[str, Any]
    error: str | None
    write_units: float
    read_units: float


@dataclass
class _CallState:
    """What one metered call carries from its parameters to its response."""

    operation: str
    params: dict[str, Any]
    before: list[dict[str, Any] | None] = field(default_factory=list)
    unmeterable: bool = False


_FILTER_OR_PROJECTION = (
    "FilterExpression",
    "QueryFilter",
    "ScanFilter",
    "ConditionalOperator",
    "ProjectionExpression",
    "AttributesToGet",
    "Select",
)
_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")


def _has_projection(params: Mapping[str, Any]) -> bool:
    return "ProjectionExpression" in params or "AttributesToGet" in params


def _default_shadow_client(client: Any) -> Any:
    """A second, unmetered DynamoDB client on the same region and endpoint.

    It comes from a fresh botocore session, so none of the metered client's
    event handlers (the meter's, or boto3's resource transformations) are on it.
    The credentials are the metered client's own, frozen at this moment, when
    botocore exposes them; otherwise the default credential chain applies.
    """
    meta = client.meta
    kwargs: dict[str, Any] = {
        "region_name": meta.region_name,
        "endpoint_url": meta.endpoint_url,
        "config": meta.config,
    }
    get_credentials = getattr(client, "_get_credentials", None)
    credentials = get_credentials() if callable(get_credentials) else None
    if credentials is not None:
        frozen = credentials.get_frozen_credentials()
        kwargs.update(
            aws_access_key_id=frozen.access_key,
            aws_secret_access_key=frozen.secret_key,
            aws_session_token=frozen.token,
        )
    return botocore.session.get_session().create_client("dynamodb", **kwargs)


class CapacityMeter:
    """Meters every DynamoDB call a boto3 client makes, in WRU, RRU and calls.

    Attach it to a low-level client (for a boto3 resource, to
    ``resource.meta.client``). For writes it reads each item's before-image
    through ``shadow_client`` with a strongly consistent GetItem just before the
    request goes out, and the after-image of an UpdateItem from
    ``ReturnValues="ALL_NEW"`` or by reading again after the call. Reads are
    sized on full items (re-read through the shadow client when the request
    projected or filtered them, because projections and filters do not reduce
    the charge). The shadow client's own calls, and its one DescribeTable per
    table, are not metered.

    The metered client's behaviour is unchanged except for those extra shadow
    reads: the meter never alters parameters or responses. Calls that fail are
    counted; a ConditionalCheckFailedException or TransactionCanceledException
    is charged as DynamoDB charges it, other errors cost no units.

    ``calls`` counts API calls made through the client, one per call however
    many times botocore retried it internally.
    """

    def __init__(self, client: Any, *, shadow_client: Any | None = None) -> None:
        service = client.meta.service_model.service_name
        if service != "dynamodb":
            raise ValueError(f"CapacityMeter needs a dynamodb client, got {service}")
        self.client = client
        self.shadow = shadow_client if shadow_client is not None else _default_shadow_client(client)
        self.usage = Usage()
        self._tables: dict[str, TableSpec] = {}
        self._lock = threading.Lock()
        self._context_key = f"bench.capacity.{id(self)}"
        self._attached = False
        self.listener: Callable[[MeteredCall], None] | None = None
        """Called after every metered call (e.g. by `bench.partitions`), in the caller's thread."""

    # -- attaching ---------------------------------------------------------

    def _handlers(self) -> list[tuple[str, str, Any, str]]:
        prefix = self._context_key
        # Order matters. "before-parameter-build" runs last so that boto3's
        # resource layer has already turned Python values into typed ones;
        # "after-call" runs first so the response is still typed (the resource
        # layer deserializes it in place in its own after-call handler).
        return [
            ("last", "before-parameter-build.dynamodb", self._on_params, f"{prefix}.params"),
            ("middle", "before-call.dynamodb", self._on_before_call, f"{prefix}.before"),
            ("first", "after-call.dynamodb", self._on_after_call, f"{prefix}.after"),
            ("middle", "after-call-error.dynamodb", self._on_call_error, f"{prefix}.error"),
        ]

    def attach(self) -> None:
        """Register the meter's handlers on the client's event system."""
        if self._attached:
            return
        events = self.client.meta.events
        for position, event, handler, unique_id in self._handlers():
            register = {
                "first": events.register_first,
                "last": events.register_last,
                "middle": events.register,
            }[position]
            register(event, handler, unique_id=unique_id)
        self._attached = True

    def detach(self) -> None:
        """Remove the meter's handlers; the usage so far is kept."""
        if not self._attached:
            return
        for _, event, handler, unique_id in self._handlers():
            self.client.meta.events.unregister(event, handler, unique_id=unique_id)
        self._attached = False

    def reset(self) -> None:
        """Start counting from zero again."""
        with self._lock:
            self.usage = Usage()

    # -- event handlers ------------------------------------------------------

    def _on_params(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        context[self._context_key] = _CallState(model.name, copy.deepcopy(params))

    def _on_before_call(self, context: dict[str, Any], **_: Any) -> None:
        # Must return None: a value returned from before-call replaces the call.
        state = context.get(self._context_key)
        if isinstance(state, _CallState):
            try:
                state.before = self._before_images(state.operation, state.params)
            except ClientError:
                # E.g. DescribeTable failed because the table does not exist:
                # the metered call will fail the same way; let it, uncharged.
                state.unmeterable = True

    def _on_after_call(
        self, http_response: Any, parsed: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        state = context.pop(self._context_key, None)
        if not isinstance(state, _CallState):
            state = _CallState(model.name, {})
        error = None
        if getattr(http_response, "status_code", 200) >= 300:
            error = parsed.get("Error", {}).get("Code", "Unknown")
        write, read = self._cost(state, parsed, error)
        with self._lock:
            self.usage.add(state.operation, write=write, read=read)
        if self.listener is not None and state.params and not state.unmeterable:
            self.listener(
                MeteredCall(state.operation, state.params, state.before, parsed, error, write, read)
            )

    def _on_call_error(self, context: dict[str, Any], **_: Any) -> None:
        # The request raised before any response (e.g. a connection error):
        # counted as a call, charged nothing.
        state = context.pop(self._context_key, None)
        if isinstance(state, _CallState):
            with self._lock:
                self.usage.add(state.operation)

    # -- helpers ---------------------------------------------------------------

    def table_spec(self, table: str) -> TableSpec:
        """The table's key schema and indexes, described once via the shadow client."""
        spec = self._tables.get(table)
        if spec is None:
            description = self.shadow.describe_table(TableName=table)["Table"]
            spec = TableSpec.from_description(description)
            self._tables[table] = spec
        return spec

    def item(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The whole item at ``key`` now (strongly consistent, unmetered), or None."""
        return self._get(table, key)

    def _get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The whole item at ``key`` (strongly consistent), or None."""
        try:
            item: dict[str, Any] | None = self.shadow.get_item(
                TableName=table, Key=key, ConsistentRead=True
            ).get("Item")
        except ClientError:
            # E.g. the table does not exist: the metered call fails the same
            # way and is charged nothing, so no image is needed.
            return None
        return item

    def _before_images(self, operation: str, params: Mapping[str, Any]) -> list[dict[str, Any] | None]:
        if operation == "PutItem":
            table = params["TableName"]
            return [self._get(table, self.table_spec(table).key_of(params["Item"]))]
        if operation in ("UpdateItem", "DeleteItem"):
            return [self._get(params["TableName"], params["Key"])]
        if operation == "BatchWriteItem":
            return [
                self._get(table, self._request_key(table, request))
                for table, request in _batch_write_requests(params)
            ]
        if operation == "TransactWriteItems":
            images: list[dict[str, Any] | None] = []
            for action in params.get("TransactItems", ()):
                kind, body = _single(action)
                table = body["TableName"]
                key = self.table_spec(table).key_of(body["Item"]) if kind == "Put" else body["Key"]
                images.append(self._get(table, key))
            return images
        return []

    def _request_key(self, table: str, request: Mapping[str, Any]) -> dict[str, Any]:
        if "PutRequest" in request:
            return self.table_spec(table).key_of(request["PutRequest"]["Item"])
        return dict(request["DeleteRequest"]["Key"])

    # -- costs -----------------------------------------------------------------

    def _cost(self, state: _CallState, parsed: Mapping[str, Any], error: str | None) -> tuple[float, float]:
        """(write units, read units) for one finished call."""
        costers = {
            "PutItem": self._cost_put,
            "UpdateItem": self._cost_update,
            "DeleteItem": self._cost_delete,
            "BatchWriteItem": self._cost_batch_write,
            "TransactWriteItems": self._cost_transact_write,
            "GetItem": self._cost_get,
            "BatchGetItem": self._cost_batch_get,
            "TransactGetItems": self._cost_transact_get,
            "Query": self._cost_query_or_scan,
            "Scan": self._cost_query_or_scan,
        }
        coster = costers.get(state.operation)
        if coster is None or not state.params or state.unmeterable:
            return 0.0, 0.0
        try:
            return coster(state, parsed, error)
        except ClientError:
            if error:
                # A failed call whose table cannot be described: nothing to charge.
                return 0.0, 0.0
            raise

    def _cost_put(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        params, (before,) = state.params, state.before
        item = params["Item"]
        if error == CONDITIONAL_CHECK_FAILED:
            # read-write-operations.html: a failed condition still consumes
            # write units sized on "an existing item in the table or a new one
            # you're attempting to create" (existing 300 KB, new 310 KB -> 310).
            return float(item_write_units(before, item)), 0.0
        if error:
            return 0.0, 0.0
        spec = self.table_spec(params["TableName"])
        return float(item_write_units(before, item) + index_write_units(before, item, spec)), 0.0

    def _cost_update(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        params, (before,) = state.params, state.before
        if error == CONDITIONAL_CHECK_FAILED:
            # ESTIMATE: the would-be new item is not known client-side, so a
            # failed conditional update is sized on the existing item (1 unit
            # if there is none), as the pre-2023 guide stated it.
            return float(item_write_units(before, None)), 0.0
        if error:
            return 0.0, 0.0
        table = params["TableName"]
        if params.get("ReturnValues") == "ALL_NEW" and "Attributes" in parsed:
            after: dict[str, Any] | None = dict(parsed["Attributes"])
        else:
            after = self._get(table, params["Key"])
        spec = self.table_spec(table)
        return float(item_write_units(before, after) + index_write_units(before, after, spec)), 0.0

    def _cost_delete(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        params, (before,) = state.params, state.before
        if error == CONDITIONAL_CHECK_FAILED:
            return float(item_write_units(before, None)), 0.0
        if error:
            return 0.0, 0.0
        spec = self.table_spec(params["TableName"])
        return float(item_write_units(before, None) + index_write_units(before, None, spec)), 0.0

    def _cost_batch_write(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        # "DynamoDB processes each item in the batch as an individual PutItem or
        # DeleteItem request": each is rounded to 1 KB on its own. Requests
        # returned in UnprocessedItems were not performed and are not charged.
        if error:
            return 0.0, 0.0
        unprocessed = {
            (table, *self._identity(table, request))
            for table, request in _batch_write_requests({"RequestItems": parsed.get("UnprocessedItems", {})})
        }
        total = 0
        for (table, request), before in zip(_batch_write_requests(state.params), state.before, strict=True):
            if (table, *self._identity(table, request)) in unprocessed:
                continue
            after = request["PutRequest"]["Item"] if "PutRequest" in request else None
            spec = self.table_spec(table)
            total += item_write_units(before, after) + index_write_units(before, after, spec)
        return float(total), 0.0

    def _identity(self, table: str, request: Mapping[str, Any]) -> tuple[str, tuple[Any, ...]]:
        spec = self.table_spec(table)
        kind = "put" if "PutRequest" in request else "delete"
        return kind, _canonical_key(self._request_key(table, request), spec.key_names)

    def _cost_transact_write(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        actions = [_single(action) for action in state.params.get("TransactItems", ())]
        if error == TRANSACTION_CANCELED:
            # ESTIMATE: AWS documents no figure for a cancelled transaction (its
            # response carries no ConsumedCapacity). Charged conservatively as
            # if every action had run its two underlying writes, sized like a
            # failed conditional write, with no index writes.
            total = sum(
                TRANSACTION_FACTOR * item_write_units(before, body.get("Item") if kind == "Put" else None)
                for (kind, body), before in zip(actions, state.before, strict=True)
            )
            return float(total), 0.0
        if error:
            return 0.0, 0.0
        total = 0
        for (kind, body), before in zip(actions, state.before, strict=True):
            table = body["TableName"]
            if kind == "ConditionCheck":
                # SECONDARY: a ConditionCheck writes nothing yet is billed as a
                # transactional write of the item it read (2 WCU for an item
                # under 1 KB), measured on real DynamoDB by
                # https://github.com/paritysuite/dynamodb-conformance/pull/67 and
                # https://github.com/nubo-db/dynoxide/pull/188 ("charged on the
                # image it read"). AWS's pages do not say.
                total += TRANSACTION_FACTOR * item_write_units(before, None)
                continue
            if kind == "Put":
                after: dict[str, Any] | None = body["Item"]
            elif kind == "Update":
                after = self._get(table, body["Key"])
            else:
                after = None
            # SECONDARY: the 2x applies to the table writes only; index writes
            # cost what the same write costs outside a transaction, as measured
            # in https://github.com/nubo-db/dynoxide/pull/188. AWS's pages do
            # not say.
            spec = self.table_spec(table)
            total += TRANSACTION_FACTOR * item_write_units(before, after)
            total += index_write_units(before, after, spec)
        return float(total), 0.0

    def _cost_get(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        # GetItem: the item size rounded up to 4 KB, halved when eventually
        # consistent (the default). A projection does not reduce the size
        # ("doing so has no impact on the item size calculations"), so a
        # projected item is re-read whole.
        if error:
            return 0.0, 0.0
        params = state.params
        item = parsed.get("Item")
        if item is not None and _has_projection(params):
            item = self._get(params["TableName"], params["Key"])
        consistent = bool(params.get("ConsistentRead", False))
        return 0.0, read_units(_size_or_zero(item), consistent=consistent)

    def _cost_batch_get(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        # BatchGetItem: "DynamoDB first rounds up the size of each item to the
        # next 4 KB boundary and then calculates the total size". Keys returned
        # in UnprocessedKeys were not read; a key that was read but has no item
        # still costs the minimum.
        if error:
            return 0.0, 0.0
        responses = parsed.get("Responses", {})
        unprocessed_keys = parsed.get("UnprocessedKeys", {})
        total = 0.0
        for table, request in state.params.get("RequestItems", {}).items():
            spec = self.table_spec(table)
            consistent = bool(request.get("ConsistentRead", False))
            unprocessed = {
                _canonical_key(key, spec.key_names) for key in unprocessed_keys.get(table, {}).get("Keys", ())
            }
            returned: dict[tuple[Any, ...], Any] = {}
            if not _has_projection(request):
                returned = {_canonical_key(item, spec.key_names): item for item in responses.get(table, ())}
            for key in request.get("Keys", ()):
                canonical = _canonical_key(key, spec.key_names)
                if canonical in unprocessed:
                    continue
                item = self._get(table, key) if _has_projection(request) else returned.get(canonical)
                total += read_units(_size_or_zero(item), consistent=consistent)
        return 0.0, total

    def _cost_transact_get(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        # "A transactional read request of an item up to 4 KB requires two read
        # units": each item rounded to 4 KB, doubled; a missing item costs the
        # minimum too (2 RCU per missing item measured by
        # https://github.com/nubo-db/dynoxide/pull/57, SECONDARY).
        # ESTIMATE: a cancelled TransactGetItems is charged nothing.
        if error:
            return 0.0, 0.0
        actions = [action["Get"] for action in state.params.get("TransactItems", ())]
        responses = list(parsed.get("Responses", ()))
        responses += [{}] * (len(actions) - len(responses))
        total = 0.0
        for get, response in zip(actions, responses, strict=True):
            item = response.get("Item")
            if item is not None and _has_projection(get):
                item = self._get(get["TableName"], get["Key"])
            total += TRANSACTION_FACTOR * read_units(_size_or_zero(item), consistent=True)
        return 0.0, total

    def _cost_query_or_scan(
        self, state: _CallState, parsed: Mapping[str, Any], error: str | None
    ) -> tuple[float, float]:
        # Query: "All items returned are treated as a single read operation,
        # where DynamoDB computes the total size of all items. DynamoDB then
        # rounds up the size to the next 4 KB boundary." Scan: "DynamoDB
        # considers the size of the items that are evaluated, not the size of
        # the items returned". Filters and projections do not lower either, so
        # when the request filtered or projected, the same page is read again
        # through the shadow client without them to see every evaluated item
        # whole. On an index the sizes are those of the index entries (GSI.html:
        # "based on the sizes of the index entries, rather than the size of the
        # item in the base table"). An empty result still costs the minimum.
        # Not modelled: the extra charge per partition searched.
        if error:
            return 0.0, 0.0
        params = state.params
        if any(name in params for name in _FILTER_OR_PROJECTION):
            items = self._evaluated_items(state.operation, params)
        else:
            items = list(parsed.get("Items", ()))
        index_name = params.get("IndexName")
        if index_name is None:
            size = sum(item_size(item) for item in items)
        else:
            spec = self.table_spec(params["TableName"])
            index = spec.index(index_name)
            size = sum(item_size(index_entry(item, spec, index) or item) for item in items)
        return 0.0, read_units(size, consistent=bool(params.get("ConsistentRead", False)))

    def _evaluated_items(self, operation: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The page of items the request evaluated, whole, before filtering."""
        rerun = {
            name: value
            for name, value in params.items()
            if name not in _FILTER_OR_PROJECTION and name != "ReturnConsumedCapacity"
        }
        # DynamoDB rejects placeholders that no remaining expression uses.
        used = set(_PLACEHOLDER.findall(rerun.get("KeyConditionExpression", "")))
        for member in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {name: value for name, value in rerun.pop(member, {}).items() if name in used}
            if kept:
                rerun[member] = kept
        call = self.shadow.query if operation == "Query" else self.shadow.scan
        return list(call(**rerun).get("Items", ()))


def _single(action: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The one (kind, body) pair of a TransactWriteItems action."""
    ((kind, body),) = action.items()
    return kind, body


def _batch_write_requests(params: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """BatchWriteItem's requests, flattened to (table, request) in order."""
    return [
        (table, request) for table, requests in params.get("RequestItems", {}).items() for request in requests
    ]
