"""Per-partition lookups for moto's tables, and moto's Table.query answered from them.

moto answers a Query by collecting every item of the table, sorting them and walking the
sorted list (moto/dynamodb/models/table.py, Table.query -> all_items()): each call costs
O(table size). Here each enabled table keeps, beside its items, a sorted list per partition
of the table and of each global secondary index (and one of the items carrying the table's
TTL attribute), updated on every write that goes through moto's Table.put_item,
Table.delete_item and DynamoDBBackend.update_item (the only places moto changes an item;
the fast client's own writes update them themselves).
A query then takes its partition's list, cuts the key range out of it with bisect, and walks
only that slice, with the exact rules of moto's loop (the limit, the 1 MB page, the start
key, which item ends a page), so its answers are the ones moto gives.

Only tables on which `enable` was called use the lookups, and only for the shapes handled
here (one hash key condition, at most one sort key condition, no legacy key conditions, a
global index with one hash and one range key); any other query runs moto's own code.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any, TypeVar

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import (
    RESULT_SIZE_LIMIT,
    GlobalSecondaryIndex,
    SecondaryIndex,
    StreamRecord,
    Table,
)
from moto.dynamodbstreams.models import ShardIterator

ATTRIBUTE = "_emit_partitions"
TRACKED = 10_000
T = TypeVar("T")
MAX_ITEM_SIZE = 405_000
"""The largest item moto stores (moto/dynamodb/models/dynamo_type.py, LimitedSizeDict)."""
KEY_TYPES = {"S": str, "N": Decimal, "B": bytes}


SIZE = "_emit_size"
"""An item's size as Item.size() measures it, kept on items the fast path wrote (moto's own
writes drop it: see `install`)."""


def size(item: Item) -> int:
    """Item.size(), measured once per write instead of on every read."""
    found = getattr(item, SIZE, None)
    if found is None:
        found = item.size()
        setattr(item, SIZE, found)
    return int(found)


def _first(entry: tuple[Any, ...]) -> Any:
    return entry[0]


def _sort_part(entry: tuple[Any, ...]) -> tuple[Any, ...]:
    return entry[:3]


@dataclass
class _GlobalIndex:
    """One global index: partition (type, value) -> entries (range, hash, sort, row)."""

    name: str
    hash_attr: str
    range_attr: str
    hash_type: str
    range_type: str
    parts: dict[tuple[str, Any], list[tuple[Any, ...]]] = field(default_factory=dict)
    broken: bool = False
    """An item whose index keys are not of the declared types: moto's own query decides then."""

    def entry(self, item: Item, row: tuple[Any, Any, _Row]) -> tuple[Any, ...] | None:
        attrs = item.attrs
        hash_value = attrs.get(self.hash_attr)
        range_value = attrs.get(self.range_attr)
        if hash_value is None or range_value is None:
            return None
        if hash_value.type != self.hash_type or range_value.type != self.range_type:
            self.broken = True
            return None
        return ((hash_value.type, hash_value.cast_value), range_value.cast_value, *row)

    def replace(self, old: tuple[Any, ...] | None, new: tuple[Any, ...] | None) -> None:
        if old is not None:
            self.remove(old)
        if new is not None:
            self.add(new)

    def add(self, entry: tuple[Any, ...]) -> None:
        part = self.parts.setdefault(entry[0], [])
        sort = entry[1:]
        bisect.insort(part, sort, key=_sort_part)

    def remove(self, entry: tuple[Any, ...]) -> None:
        part = self.parts.get(entry[0])
        sort = entry[1:]
        if part is None:
            return
        at = bisect.bisect_left(part, sort[:3], key=_sort_part)
        if at < len(part) and part[at][:3] == sort[:3]:
            del part[at]
        if not part:
            del self.parts[entry[0]]


@dataclass(slots=True, eq=False)
class _Row:
    """One primary key: its item as stored now, and its entries in the lookups."""

    key: tuple[DynamoType, DynamoType]
    item: Item | None
    gsi: list[tuple[Any, ...] | None]
    ttl: tuple[Any, ...] | None = None


class TablePartitions:
    """The sorted lookups of one table, kept beside its items (as an attribute of the table)."""

    def __init__(self, table: Table) -> None:
        self.signature = signature(table)
        self.hash_attr = table.hash_key_attr
        self.range_attr = table.range_key_attr
        self.hash_type = table.hash_key_type
        self.range_type = table.range_key_type
        # hash key -> sorted [(sort value, row)]
        self.base: dict[DynamoType, list[tuple[Any, _Row]]] = {}
        self.rows: dict[tuple[DynamoType, DynamoType], _Row] = {}
        self.gsis: list[_GlobalIndex] = []
        types = {a["AttributeName"]: a["AttributeType"] for a in table.attr}
        for index in table.global_indexes:
            hashes = [k["AttributeName"] for k in index.schema if k["KeyType"] == "HASH"]
            ranges = [k["AttributeName"] for k in index.schema if k["KeyType"] == "RANGE"]
            if len(hashes) == 1 and len(ranges) == 1 and hashes[0] in types and ranges[0] in types:
                self.gsis.append(
                    _GlobalIndex(index.name, hashes[0], ranges[0], types[hashes[0]], types[ranges[0]])
                )
        self.ttl_attr = ttl_attribute(table)
        # sorted [(ttl, hash value, sort value, row)] of items with a numeric ttl
        self.ttl: list[tuple[Any, ...]] = []
        for partition in list(table.items.values()):
            for item in list(partition.values()):
                self.reconcile_item(item.hash_key, item.range_key, item)

    # -- writes ---------------------------------------------------------------

    def reconcile(self, table: Table, hash_key: DynamoType, range_key: DynamoType) -> None:
        """Bring the lookups of one primary key in line with the item stored there now."""
        partition = table.items.get(hash_key)
        item = partition.get(range_key) if partition is not None else None
        self.reconcile_item(hash_key, range_key, item)

    def reconcile_item(self, hash_key: DynamoType, range_key: DynamoType, item: Item | None) -> None:
        key = (hash_key, range_key)
        row = self.rows.get(key)
        if item is None:
            if row is not None:
                self._forget(key, row)
            return
        if row is None:
            row = _Row(key, item, [None] * len(self.gsis))
            self.rows[key] = row
            self._base_add(hash_key, range_key, row)
        row.item = item
        ids = (hash_key.cast_value, range_key.cast_value, row)
        for i, gsi in enumerate(self.gsis):
            entry = gsi.entry(item, ids)
            if entry != row.gsi[i]:
                gsi.replace(row.gsi[i], entry)
                row.gsi[i] = entry
        ttl = self._ttl_entry(item, ids)
        if ttl != row.ttl:
            if row.ttl is not None:
                self._ttl_remove(row.ttl)
            if ttl is not None:
                bisect.insort(self.ttl, ttl, key=_sort_part)
            row.ttl = ttl

    def _forget(self, key: tuple[DynamoType, DynamoType], row: _Row) -> None:
        self._base_remove(*key)
        for gsi, entry in zip(self.gsis, row.gsi, strict=True):
            gsi.replace(entry, None)
        if row.ttl is not None:
            self._ttl_remove(row.ttl)
        del self.rows[key]
        # A row and its entries refer to each other: undone here, so that reference
        # counting frees them (see devserver.embedded.heap).
        row.gsi, row.ttl, row.item = [], None, None

    def _base_add(self, hash_key: DynamoType, range_key: DynamoType, row: _Row) -> None:
        part = self.base.setdefault(hash_key, [])
        bisect.insort(part, (range_key.cast_value, row), key=_first)

    def _base_remove(self, hash_key: DynamoType, range_key: DynamoType) -> None:
        part = self.base.get(hash_key)
        if part is None:
            return
        value = range_key.cast_value
        at = bisect.bisect_left(part, value, key=_first)
        if at < len(part) and part[at][0] == value:
            del part[at]
        if not part:
            del self.base[hash_key]

    def _ttl_entry(self, item: Item, ids: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if self.ttl_attr is None:
            return None
        value = item.attrs.get(self.ttl_attr)
        if value is None or value.type != "N":
            return None
        return (value.cast_value, ids[0], ids[1], ids[2])

    def _ttl_remove(self, entry: tuple[Any, ...]) -> None:
        at = bisect.bisect_left(self.ttl, entry[:3], key=_sort_part)
        if at < len(self.ttl) and self.ttl[at][:3] == entry[:3]:
            del self.ttl[at]

    # -- reads ----------------------------------------------------------------

    def expired(self, now: Decimal) -> list[tuple[DynamoType, DynamoType]]:
        """Primary keys of the items whose TTL attribute is a number at most `now`."""
        end = bisect.bisect_right(self.ttl, now, key=_first)
        return [entry[3].key for entry in self.ttl[:end]]

    def gsi(self, name: str) -> _GlobalIndex | None:
        return next((g for g in self.gsis if g.name == name), None)


def ttl_attribute(table: Table) -> str | None:
    ttl = table.ttl or {}
    return ttl.get("AttributeName") if ttl.get("TimeToLiveStatus") == "ENABLED" else None


def signature(table: Table) -> tuple[Any, ...]:
    """What the lookups were built from: rebuilt when a table's indexes or TTL change."""
    return (
        table.hash_key_attr,
        table.range_key_attr,
        tuple(
            (g.name, tuple((k["AttributeName"], k["KeyType"]) for k in g.schema))
            for g in table.global_indexes
        ),
        ttl_attribute(table),
    )


def partitions(table: Table) -> TablePartitions | None:
    """The table's lookups when enabled (rebuilt first if the table's definition changed)."""
    found: TablePartitions | None = table.__dict__.get(ATTRIBUTE)
    if found is not None and found.signature != signature(table):
        found = TablePartitions(table)
        table.__dict__[ATTRIBUTE] = found
    return found


def enable(table: Table) -> TablePartitions | None:
    """Keep lookups for this table (only tables with a hash and a sort key of S, N or B)."""
    install()
    if table.range_key_attr is None or table.hash_key_type not in KEY_TYPES:
        return None
    if table.range_key_type not in KEY_TYPES:
        return None
    if ATTRIBUTE not in table.__dict__:
        table.__dict__[ATTRIBUTE] = TablePartitions(table)
    return partitions(table)


def reconcile(table: Table | None, hash_key: DynamoType | None, range_key: DynamoType | None) -> None:
    if table is None or hash_key is None or range_key is None:
        return
    found = partitions(table)
    if found is not None:
        found.reconcile(table, hash_key, range_key)


# -- the query --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Query:
    """The arguments of moto's Table.query, as DynamoDBBackend.query passes them."""

    hash_key: DynamoType | None
    range_comparison: str | None
    range_objs: list[DynamoType]
    limit: int | None
    exclusive_start_key: dict[str, Any] | None
    scan_index_forward: bool
    projection_expressions: list[list[str]] | None
    index_name: str | None
    consistent_read: bool
    filter_expression: Any
    hash_key_conditions: list[tuple[str, DynamoType]] | None
    range_key_conditions: list[tuple[str, str, list[DynamoType]]] | None

    def arguments(self) -> list[Any]:
        """The arguments again, in moto's order (for when moto answers the query itself)."""
        return [getattr(self, f.name) for f in fields(self)]


@dataclass
class _Plan:
    """What a query reads: its partition's sorted entries and how to reach each item."""

    entries: list[tuple[Any, ...]]
    sort_key: Callable[[tuple[Any, ...]], Any]
    """The part of an entry the key condition's range is on."""
    full_key: Callable[[tuple[Any, ...]], Any]
    """The part of an entry the start key is compared with (moto's sort attributes)."""
    start: Any


@dataclass(frozen=True)
class _Keys:
    """The key attributes (and their types) of the table or index a query reads."""

    hash_attr: str
    range_attr: str
    hash_type: str
    range_type: str


def _keys_read(parts: TablePartitions, table: Table, query: _Query) -> _Keys | None:
    if query.index_name is None:
        assert parts.range_attr is not None and parts.range_type is not None
        return _Keys(parts.hash_attr, parts.range_attr, parts.hash_type, parts.range_type)
    gsi = parts.gsi(query.index_name)
    index = next((i for i in table.global_indexes if i.name == query.index_name), None)
    if gsi is None or gsi.broken or query.consistent_read or not isinstance(index, GlobalSecondaryIndex):
        return None
    return _Keys(gsi.hash_attr, gsi.range_attr, gsi.hash_type, gsi.range_type)


def _plan(parts: TablePartitions, table: Table, query: _Query) -> _Plan | None:
    """How to answer from the lookups, or None when moto's own query must."""
    hash_key, conditions, ranges = query.hash_key, query.hash_key_conditions, query.range_key_conditions
    if hash_key is None or not conditions or len(conditions) != 1 or (ranges and len(ranges) > 1):
        return None
    if bool(query.range_comparison) != bool(ranges):
        return None
    keys = _keys_read(parts, table, query)
    if keys is None or conditions[0][0] != keys.hash_attr or hash_key.type != keys.hash_type:
        return None
    if ranges:
        name, comparison, values = ranges[0]
        if name != keys.range_attr or any(v.type != keys.range_type for v in values):
            return None
        if comparison not in _RANGES or (comparison == "BEGINS_WITH" and keys.range_type == "N"):
            return None
    start = _start(parts, query, keys)
    if start is None:
        return None
    if query.index_name is None:
        return _Plan(parts.base.get(hash_key, []), _first, _first, start[0] if start else None)
    gsi = parts.gsi(query.index_name)
    assert gsi is not None
    return _Plan(gsi.parts.get((hash_key.type, hash_key.cast_value), []), _first, _sort_part, start or None)


def _start(parts: TablePartitions, query: _Query, keys: _Keys) -> tuple[Any, ...] | None:
    """The start key as a sort tuple, () without one, or None when moto must compare it itself.
    The base table's entries compare by their sort key alone; an index's by (range, hash, sort)."""
    key = query.exclusive_start_key
    if key is None:
        return ()
    names = [(keys.hash_attr, keys.hash_type), (keys.range_attr, keys.range_type)]
    if query.index_name is not None:
        assert parts.range_attr is not None and parts.range_type is not None
        names += [(parts.hash_attr, parts.hash_type), (parts.range_attr, parts.range_type)]
    values: list[Any] = []
    for name, expected in names:
        raw = key.get(name)
        if not isinstance(raw, dict) or len(raw) != 1:
            return None
        value = DynamoType(raw)
        if value.type != expected:
            return None
        values.append(value.cast_value)
    assert query.hash_key is not None
    if values[0] != query.hash_key.cast_value:
        return None
    return tuple(values[1:])


def _range(plan: _Plan, comparison: str | None, values: list[Any]) -> tuple[int, int]:
    entries, key = plan.entries, plan.sort_key
    n = len(entries)
    if comparison is None:
        return 0, n
    return _RANGES[comparison](entries, key, values, n)


def _begins_with(entries: list[tuple[Any, ...]], key: Any, v: list[Any], n: int) -> tuple[int, int]:
    lo = bisect.bisect_left(entries, v[0], key=key)
    hi = lo
    while hi < n and key(entries[hi]).startswith(v[0]):
        hi += 1
    return lo, hi


def _between(entries: list[tuple[Any, ...]], key: Any, v: list[Any], n: int) -> tuple[int, int]:
    lo = bisect.bisect_left(entries, v[0], key=key)
    return lo, max(lo, bisect.bisect_right(entries, v[1], key=key))


_RANGES: dict[str, Callable[[list[tuple[Any, ...]], Any, list[Any], int], tuple[int, int]]] = {
    "=": lambda e, k, v, n: (bisect.bisect_left(e, v[0], key=k), bisect.bisect_right(e, v[0], key=k)),
    "<": lambda e, k, v, n: (0, bisect.bisect_left(e, v[0], key=k)),
    "<=": lambda e, k, v, n: (0, bisect.bisect_right(e, v[0], key=k)),
    ">": lambda e, k, v, n: (bisect.bisect_right(e, v[0], key=k), n),
    ">=": lambda e, k, v, n: (bisect.bisect_left(e, v[0], key=k), n),
    "BETWEEN": _between,
    "BEGINS_WITH": _begins_with,
}


def _walk(plan: _Plan, lo: int, hi: int, forward: bool) -> tuple[Iterator[int], Iterator[int]]:
    """Positions of the items in the key range, then of those after it, in query order
    (after the start key: moto skips what comes before it)."""
    n = len(plan.entries)
    if forward:
        begin = 0 if plan.start is None else bisect.bisect_right(plan.entries, plan.start, key=plan.full_key)
        first = max(begin, lo)
        return iter(range(first, hi)), iter(range(max(hi, begin), n))
    top = n - 1 if plan.start is None else bisect.bisect_left(plan.entries, plan.start, key=plan.full_key) - 1
    return iter(range(min(top, hi - 1), lo - 1, -1)), iter(range(min(top, lo - 1), -1, -1))


def _item(table: Table, plan: _Plan, position: int) -> Item:
    entry = plan.entries[position]
    item: Item = entry[-1].item
    return item


def _indexed_query(table: Table, plan: _Plan, query: _Query) -> tuple[list[Item], int, dict[str, Any] | None]:
    limit, index_name = query.limit, query.index_name
    lo, hi = _range(plan, query.range_comparison, [o.cast_value for o in query.range_objs])
    matching, after = _walk(plan, lo, hi, query.scan_index_forward)
    results: list[Item] = []
    result_size = 0
    last_evaluated_key = None
    # moto's loop (Table.query): before taking an item it ends the page when the limit is
    # reached or the item would pass 1 MB; items outside the key range are skipped, but an
    # item after the range still ends a full page. Items before the range never can (the
    # page is empty then, and no item is over 1 MB), so only those after it are visited.
    for position in matching:
        candidate = _item(table, plan, position)
        measured = size(candidate)
        if len(results) == limit or result_size + measured > RESULT_SIZE_LIMIT:
            last_evaluated_key = table._get_last_evaluated_key(results[-1], index_name)
            break
        results.append(candidate)
        result_size += measured
    else:
        for position in after:
            if len(results) == limit:
                last_evaluated_key = table._get_last_evaluated_key(results[-1], index_name)
                break
            if result_size + MAX_ITEM_SIZE <= RESULT_SIZE_LIMIT:
                break  # no item can pass 1 MB from here
            if result_size + size(_item(table, plan, position)) > RESULT_SIZE_LIMIT:
                last_evaluated_key = table._get_last_evaluated_key(results[-1], index_name)
                break
    scanned_count = len(results)
    # moto copies the results before projecting them; they are serialized before the next
    # call (one call at a time), so the copy changes nothing here.
    if index_name:
        index = table.get_index(index_name)
        results = [_project(index, r) for r in results]
    if query.filter_expression is not None:
        results = [item for item in results if query.filter_expression.expr(item)]
    if query.projection_expressions:
        results = [r.project(query.projection_expressions) for r in results]
    return results, scanned_count, last_evaluated_key


_LIST_ELEMENT = re.compile(r"(.+)\[(\d+)\]$")
_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _project(index: SecondaryIndex, item: Item) -> Item:
    """SecondaryIndex.project, for top-level attributes without reading the whole item once per
    attribute: moto's Item.project turns the item into plain values for each attribute it
    keeps, takes that attribute, and turns the kept values back into attribute values; here
    only the kept attributes make that trip."""
    names = _projected(index)
    if names is None:
        return index.project(item)
    projected = untracked(Item)
    projected.hash_key, projected.range_key = item.hash_key, item.range_key
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)
    for name in names:
        value = item.attrs.get(name)
        if value is not None:
            dict.__setitem__(attrs, name, _round_trip(value))
    projected.attrs = attrs
    return projected


_projections: dict[int, tuple[Any, Any, list[str] | None]] = {}


def _projected(index: SecondaryIndex) -> list[str] | None:
    """The top-level attributes an index keeps (None: moto projects), once per index (and
    again if the index's projection or schema is replaced)."""
    projection = index.projection or {}
    known = _projections.get(id(index))
    if known is not None and known[0] is index.projection and known[1] is index.schema:
        return known[2]
    kind = projection.get("ProjectionType")
    names: list[str] | None = None
    if kind in ("KEYS_ONLY", "INCLUDE"):
        names = index.table_key_attrs + [k["AttributeName"] for k in index.schema]
        if kind == "INCLUDE":
            names = names + list(projection.get("NonKeyAttributes", []))
        if any(_LIST_ELEMENT.match(name) for name in names):
            names = None
    _projections[id(index)] = (index.projection, index.schema, names)
    return names


_CANONICAL_INTEGER = re.compile(r"0|-?[1-9][0-9]{0,37}")


def _round_trip(value: DynamoType) -> DynamoType:
    """The value after moto's trip through plain values (TypeDeserializer, then TypeSerializer):
    the same value for a string, a boolean, a null or a number already written as boto3
    writes it (such values are never changed in place: see `dynamo`); others make the trip."""
    kind = value.type
    if kind in ("S", "BOOL", "NULL") or (kind == "N" and _CANONICAL_INTEGER.fullmatch(value.value)):
        return value
    plain: Any = value.to_regular_json()
    trip: Any = _serializer.serialize(_deserializer.deserialize(plain))
    return DynamoType(trip)


def untracked(cls: type[T]) -> T:
    """A new, empty instance of a moto model class that moto does not keep. moto appends every
    instance of its models (each item, each stream record, ...) to a list on the class
    (`instances_tracked`, for its dashboard) and never lets go of them."""
    return object.__new__(cls)


def forget_tracked() -> None:
    """Let go of what moto keeps of the instances it made itself (see `untracked`): items,
    stream records and shard iterators pile up in `instances_tracked` for the life of the
    process. Only moto's dashboard reads those lists."""
    for model in (Item, StreamRecord, ShardIterator):
        tracked: list[Any] = getattr(model, "instances_tracked", [])
        if len(tracked) > TRACKED:
            tracked.clear()


SHARED = 50_000
_shared: dict[tuple[str, Any], DynamoType] = {}


def dynamo(raw: dict[str, Any]) -> DynamoType:
    """DynamoType(raw), with short strings, numbers, booleans and nulls shared between items:
    most of an item's values (a status, a count, a name, a time of one batch) are the same
    in many items, and each DynamoType costs memory. moto never changes such a value in place
    (only maps, lists and sets), so sharing one changes nothing else."""
    [(kind, value)] = raw.items()
    if kind in _SCALARS and (not isinstance(value, str) or len(value) <= _SHORT):
        key = (kind, value)
        found = _shared.get(key)
        if found is None:
            if len(_shared) >= SHARED:
                _shared.clear()
            found = _shared[key] = DynamoType(raw)
        return found
    if kind == "M":
        built = DynamoType.__new__(DynamoType)
        built.type, built.value = kind, {k: dynamo(v) for k, v in value.items()}
        return built
    if kind == "L":
        built = DynamoType.__new__(DynamoType)
        built.type, built.value = kind, [dynamo(v) for v in value]
        return built
    return DynamoType(raw)


_SCALARS = frozenset({"S", "N", "BOOL", "NULL"})
_SHORT = 64


def build_item(hash_key: DynamoType, range_key: DynamoType | None, attrs: dict[str, Any]) -> Item:
    """Item(hash_key, range_key, attrs) for attributes known to fit: Item() re-measures the
    whole item for each attribute it adds (LimitedSizeDict), which makes building one
    quadratic in its attributes."""
    item = untracked(Item)
    item.hash_key, item.range_key = hash_key, range_key
    built = LimitedSizeDict.__new__(LimitedSizeDict)
    for name, value in attrs.items():
        dict.__setitem__(built, name, dynamo(value))
    item.attrs = built
    return item


# -- the patches --------------------------------------------------------------------------

_original: dict[str, Any] = {}


def install() -> None:
    """Patch moto (once): every write keeps enabled tables' lookups current, and their
    queries use them. Tables without `enable` behave exactly as before."""
    if _original:
        return
    _original["query"] = Table.query
    _original["put_item"] = Table.put_item
    _original["delete_item"] = Table.delete_item
    _original["update_item"] = DynamoDBBackend.update_item

    @functools.wraps(Table.query)
    def query(  # noqa: PLR0917 - moto's signature
        self: Table,
        hash_key: DynamoType | None,
        range_comparison: str | None,
        range_objs: list[DynamoType],
        limit: int,
        exclusive_start_key: dict[str, Any],
        scan_index_forward: bool,
        projection_expressions: list[list[str]] | None,
        index_name: str | None = None,
        consistent_read: bool = False,
        filter_expression: Any = None,
        hash_key_conditions: list[tuple[str, DynamoType]] | None = None,
        range_key_conditions: list[tuple[str, str, list[DynamoType]]] | None = None,
        **filter_kwargs: Any,
    ) -> tuple[list[Item], int, dict[str, Any] | None]:
        parts = partitions(self)
        asked = _Query(
            hash_key,
            range_comparison,
            range_objs,
            limit,
            exclusive_start_key,
            scan_index_forward,
            projection_expressions,
            index_name,
            consistent_read,
            filter_expression,
            hash_key_conditions,
            range_key_conditions,
        )
        plan = _plan(parts, self, asked) if parts is not None and not filter_kwargs else None
        if plan is None:
            return _original["query"](self, *asked.arguments(), **filter_kwargs)
        return _indexed_query(self, plan, asked)

    @functools.wraps(Table.put_item)
    def put_item(self: Table, item_attrs: dict[str, Any], *args: Any, **kwargs: Any) -> Item:
        try:
            stored: Item = _original["put_item"](self, item_attrs, *args, **kwargs)
            return stored
        finally:
            if ATTRIBUTE in self.__dict__:
                reconcile(self, *_keys(self, item_attrs))

    @functools.wraps(Table.delete_item)
    def delete_item(self: Table, hash_key: DynamoType, range_key: DynamoType | None) -> Item | None:
        try:
            deleted: Item | None = _original["delete_item"](self, hash_key, range_key)
            return deleted
        finally:
            if ATTRIBUTE in self.__dict__:
                reconcile(self, hash_key, range_key)

    @functools.wraps(DynamoDBBackend.update_item)
    def update_item(
        self: DynamoDBBackend, table_name: str, key: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Item:
        try:
            updated: Item = _original["update_item"](self, table_name, key, *args, **kwargs)
            return updated
        finally:
            _updated(self.tables.get(table_name), key)

    Table.query = query  # type: ignore[method-assign]
    Table.put_item = put_item  # type: ignore[method-assign]
    Table.delete_item = delete_item  # type: ignore[method-assign]
    DynamoDBBackend.update_item = update_item  # type: ignore[method-assign]


def _updated(table: Table | None, key: dict[str, Any]) -> None:
    """After an update_item (done or refused) on `table`: an enabled table's lookups follow
    the item."""
    if table is None or ATTRIBUTE not in table.__dict__:
        return
    hash_key, range_key = _keys(table, key)
    # moto changes the item in place: its kept size no longer holds.
    if hash_key is not None and range_key is not None:
        changed = table.items.get(hash_key, {}).get(range_key)
        if changed is not None and hasattr(changed, SIZE):
            delattr(changed, SIZE)
    reconcile(table, hash_key, range_key)


def _keys(table: Table, attrs: dict[str, Any]) -> tuple[DynamoType | None, DynamoType | None]:
    """The primary key in `attrs` (wire format), as moto keys items; None where absent or odd."""
    found: list[DynamoType | None] = []
    for name in (table.hash_key_attr, table.range_key_attr):
        raw = attrs.get(name) if name else None
        try:
            found.append(DynamoType(raw) if isinstance(raw, dict) and len(raw) == 1 else None)
        except Exception:
            found.append(None)
    return found[0], found[1]
