"""Load per partition key, and the throughput ceiling the busiest key sets.

Why: DynamoDB serves at most 1,000 write units and 3,000 read units a second on any
one partition key, in the table and in each global index alike, however much capacity
the table has. A design whose every job touches one key (a counter, a token, one index
shard) stops there, so the benchmark shows, per workload, the key that stops it first.

`PartitionLoad` listens to a `bench.capacity.CapacityMeter` and charges each item a call
writes or reads to its partition key, sized by the same rules as the meter: a table
write to the item's `pk`; an index write to the index key of the entry that appears,
disappears or changes (both keys when it moves, see `capacity.index_write_units`); an
index Query to the key it names. Left out: UnprocessedItems of a batch (moto leaves
none), and a Scan, which reads every partition and is charged to one pseudo-key.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.capacity import (
    TRANSACTION_FACTOR,
    IndexSpec,
    Item,
    MeteredCall,
    TableSpec,
    index_entry,
    item_size,
    item_write_units,
    read_units,
    write_units,
)
from shared.auth import CACHE_MS
from shared.store import keys

WRITE_LIMIT = 1_000
"""Write units a second one partition key takes, table or index."""
READ_LIMIT = 3_000
"""Read units a second one partition key takes, table or index."""
TARGET_JOBS_PER_S = 10_000
"""The bench's target: one busy name without limits takes this many jobs a second, so no
partition key may set a lower ceiling (and the clock's lease drain keeps up with it)."""
TABLE = "table"
SCAN = "(scan: every partition)"


@dataclass(frozen=True, order=True)
class PartitionKey:
    """A partition key value, in the table (`where` = "table") or in an index by name."""

    where: str
    value: str

    def __str__(self) -> str:
        return f"{self.value} ({self.where})"


@dataclass(frozen=True)
class Ceiling:
    """What one key allows: jobs a second before its writes or its reads hit the limit."""

    key: PartitionKey
    jobs_per_second: float
    write_share: float
    read_share: float


@dataclass
class PartitionLoad:
    """Write and read units per partition key, fed one metered call at a time."""

    spec_of: Callable[[str], TableSpec]
    item_at: Callable[[str, Mapping[str, Any]], Item | None]
    writes: defaultdict[PartitionKey, float] = field(default_factory=lambda: defaultdict(float))
    reads: defaultdict[PartitionKey, float] = field(default_factory=lambda: defaultdict(float))

    def scale(self, prefixes: tuple[str, ...], factor: float) -> None:
        """Charge the keys starting with `prefixes` `factor` times what was measured."""
        for key in list(self.writes):
            if key.value.startswith(prefixes):
                self.writes[key] *= factor

    def record(self, call: MeteredCall) -> None:
        """Charge the call's units to the keys it touched (the listener a meter calls)."""
        for op, body, before, factor in _writes(call):
            self._write(op, body, before, call, factor=factor)
        params, op = call.params, call.operation
        if op == "GetItem":
            self._read_item(params["TableName"], params["Key"], bool(params.get("ConsistentRead")))
        elif op == "BatchGetItem":
            for table, request in params.get("RequestItems", {}).items():
                for key in request.get("Keys", ()):
                    self._read_item(table, key, bool(request.get("ConsistentRead")))
        elif op in ("Query", "Scan") and not call.error:
            self.reads[self._queried_key(op, params)] += call.read_units

    def _read_item(self, table: str, key: Mapping[str, Any], consistent: bool) -> None:
        item = self.item_at(table, key)
        size = 0 if item is None else item_size(item)
        self.reads[PartitionKey(TABLE, _text(key[self.spec_of(table).hash_key]))] += read_units(
            size, consistent=consistent
        )

    def _write(
        self, op: str, body: Mapping[str, Any], before: Item | None, call: MeteredCall, *, factor: int
    ) -> None:
        spec = self.spec_of(body["TableName"])
        key = body.get("Key") or body["Item"]
        pk = PartitionKey(TABLE, _text(key[spec.hash_key]))
        if op == "ConditionCheck" or call.error is not None:
            # Billed on the item it read (or would have written), twice in a transaction.
            attempted = body.get("Item") if op == "PutItem" else None
            self.writes[pk] += factor * item_write_units(before, attempted)
            return
        after = self._after(op, body, call, factor=factor)
        self.writes[pk] += factor * item_write_units(before, after)
        for index in spec.indexes:  # index writes are not doubled in a transaction (see capacity)
            self._write_index(index, index_entry(before, spec, index), index_entry(after, spec, index))

    def _after(self, op: str, body: Mapping[str, Any], call: MeteredCall, *, factor: int) -> Item | None:
        """The item a write leaves (None: deleted)."""
        if op == "PutItem":
            item: Item = body["Item"]
            return item
        if op != "UpdateItem":
            return None
        attributes = call.response.get("Attributes")
        if factor == 1 and body.get("ReturnValues") == "ALL_NEW" and attributes is not None:
            return dict(attributes)
        return self.item_at(body["TableName"], body["Key"])

    def _write_index(self, index: IndexSpec, old: Item | None, new: Item | None) -> None:
        """An index entry that appears, disappears, moves or changes in place."""
        if old is not None and new is not None and all(old[n] == new[n] for n in index.key_names):
            if old != new:  # only projected attributes changed: one write, in place
                self.writes[PartitionKey(index.name, _text(new[index.hash_key]))] += write_units(
                    max(item_size(old), item_size(new))
                )
            return
        for entry in (old, new):  # appears, disappears or moves: a write on each key it touches
            if entry is not None:
                self.writes[PartitionKey(index.name, _text(entry[index.hash_key]))] += write_units(
                    item_size(entry)
                )

    def _queried_key(self, op: str, params: Mapping[str, Any]) -> PartitionKey:
        if op == "Scan":
            return PartitionKey(params.get("IndexName", TABLE), SCAN)
        spec = self.spec_of(params["TableName"])
        index = params.get("IndexName")
        hash_key = spec.index(index).hash_key if index else spec.hash_key
        names = params.get("ExpressionAttributeNames", {})
        values = params.get("ExpressionAttributeValues", {})
        for name, placeholder in _EQUALS.findall(params.get("KeyConditionExpression", "")):
            if names.get(name, name) == hash_key:
                return PartitionKey(index or TABLE, _text(values[placeholder]))
        raise ValueError(f"no {hash_key} = :value in {params.get('KeyConditionExpression')!r}")

    # -- what follows ------------------------------------------------------------

    def ceilings(self, jobs: int) -> list[Ceiling]:
        """Every key's ceiling for a workload of `jobs` jobs, lowest (busiest) first; but the
        books' slot maps, whose load follows the processes and slots, not the jobs
        (`describe_slot_maps`)."""
        total_w, total_r = sum(self.writes.values()), sum(self.reads.values())
        out = []
        for key in (set(self.writes) | set(self.reads)) - {PartitionKey(TABLE, keys.BOOK_MAPS)}:
            w, r = self.writes.get(key, 0.0), self.reads.get(key, 0.0)
            allowed = min(
                WRITE_LIMIT * jobs / w if w else float("inf"), READ_LIMIT * jobs / r if r else float("inf")
            )
            out.append(
                Ceiling(key, allowed, w / total_w if total_w else 0.0, r / total_r if total_r else 0.0)
            )
        return sorted(out, key=lambda c: (c.jobs_per_second, c.key))


def _writes(call: MeteredCall) -> Iterator[tuple[str, Mapping[str, Any], Item | None, int]]:
    """Each item write of a call: (operation, body, item before, factor: 2 in a transaction)."""
    params, op = call.params, call.operation
    if op in ("PutItem", "UpdateItem", "DeleteItem"):
        yield op, params, call.before[0], 1
    elif op == "BatchWriteItem":
        requests = [(t, r) for t, rs in params.get("RequestItems", {}).items() for r in rs]
        for (table, request), before in zip(requests, call.before, strict=True):
            put = request.get("PutRequest")
            body = {"TableName": table, **(put or request["DeleteRequest"])}
            yield ("PutItem" if put else "DeleteItem"), body, before, 1
    elif op == "TransactWriteItems":
        for action, before in zip(params.get("TransactItems", ()), call.before, strict=True):
            ((kind, body),) = action.items()
            yield (f"{kind}Item" if kind != "ConditionCheck" else kind), body, before, TRANSACTION_FACTOR


_EQUALS = re.compile(r"(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)")


def _text(value: Mapping[str, Any]) -> str:
    ((_, payload),) = value.items()
    return str(payload)


def shared_by_every_space(key: PartitionKey, spaces: set[str]) -> bool:
    """A key that names no space is one every space's traffic lands on."""
    return not any(space in re.split(r"[#:]", key.value) for space in spaces)


def describe_load(
    workload: str, load: PartitionLoad, jobs: int, spaces: set[str], spread: Mapping[str, int] | None = None
) -> list[str]:
    """The busiest key's ceiling, then each family of keys every space shares (`LEASE#n`)
    with its share of the units and the ceiling of its busiest member.

    `spread` names families whose members are picked at random for each write (`LEASE#n`:
    64): a short run puts a few writes on one member by chance, but at thousands a second
    each member takes its even share, which is what is shown for them."""
    lines = [f"{workload}: busiest key {busiest(load, jobs, spread or {})[1]}"]
    return lines + [line for _, line in shared_ceilings(load, jobs, spaces, spread).values()]


def shared_ceilings(
    load: PartitionLoad, jobs: int, spaces: set[str], spread: Mapping[str, int] | None = None
) -> dict[str, tuple[float, str]]:
    """Each family of keys every space shares (`LEASE#n (table)`): the ceiling of its
    busiest member (a family in `spread` at its even share), and its line."""
    families: dict[PartitionKey, list[Ceiling]] = {}
    for c in load.ceilings(jobs):
        if shared_by_every_space(c.key, spaces):
            families.setdefault(_family(c.key), []).append(c)
    out = {}
    for family, members in families.items():
        top = members[0]
        family_w = sum(load.writes.get(m.key, 0.0) for m in members)
        family_r = sum(load.reads.get(m.key, 0.0) for m in members)
        w = family_w / (sum(load.writes.values()) or 1)
        r = family_r / (sum(load.reads.values()) or 1)
        count = (spread or {}).get(family.value)
        if count:
            top_w, top_r, most = family_w / count, family_r / count, f"each of {count} (picked at random)"
        else:
            top_w, top_r, most = load.writes.get(top.key, 0.0), load.reads.get(top.key, 0.0), top.key.value
        load_at = max(top_w / WRITE_LIMIT, top_r / READ_LIMIT) / jobs
        ceiling = 1 / load_at if load_at else float("inf")
        out[str(family)] = (
            ceiling,
            f"  shared by every space: {family}, {len(members)} key(s): {w:.1%} of writes, {r:.1%} of reads;"
            f" busiest {most} at {TARGET_JOBS_PER_S * load_at:.0%} of its limit at {TARGET_JOBS_PER_S:,}"
            f" jobs/s, ceiling: {ceiling:,.0f} jobs/s",
        )
    return out


def hashed(space: str) -> dict[str, int]:
    """The key families a workload in `space` picks a member of by hash or in turn (the
    write shards of a slot of the lease book, the space's job partitions): counted at their
    even share."""
    return {
        f"{keys.LEASE_PREFIX}n": keys.BOOK_SHARDS,
        f"{keys.TIMER_PREFIX}n": keys.BOOK_SHARDS,
        f"{keys.JOB_PREFIX}{space}#n": keys.JOB_SHARDS,
    }


def busiest(load: PartitionLoad, jobs: int, spread: Mapping[str, int]) -> tuple[float, str]:
    """The busiest key's ceiling and its description, a family in `spread` counted at its
    even share (what thousands of jobs a second give each member; a short run puts more on
    one by chance)."""
    ceilings = load.ceilings(jobs)
    single = next((c for c in ceilings if _family(c.key).value not in spread), None)
    best = (single.jobs_per_second, f"{single.key}: {_line(single)}") if single else (float("inf"), "none")
    total_w, total_r = sum(load.writes.values()) or 1, sum(load.reads.values()) or 1
    for name, members in spread.items():
        found = [c.key for c in ceilings if _family(c.key).value == name]
        if not found:
            continue
        w = sum(load.writes.get(k, 0.0) for k in found) / members
        r = sum(load.reads.get(k, 0.0) for k in found) / members
        at = max(w / WRITE_LIMIT, r / READ_LIMIT) / jobs
        ceiling = 1 / at if at else float("inf")
        if ceiling < best[0]:
            shares = f"{w / total_w:.1%} of writes, {r / total_r:.1%} of reads"
            best = (ceiling, f"each of {members} {name} (hashed): {shares}; ceiling: {ceiling:,.0f} jobs/s")
    return best


_BOOK_SHARD = re.compile(
    rf"^({re.escape(keys.LEASE_PREFIX)}|{re.escape(keys.DEADLINE_PREFIX)}|{re.escape(keys.TIMER_PREFIX)})\d+#\d+$"
)
"""A write shard of a time slot of a book (`LEASE#{slot's end}#{n}`): its family is the
shards of one slot, `LEASE#n` (the bench files all its leases in one slot, the worst case)."""


_MARK = re.compile(rf"^{re.escape(keys.TALLIED_PREFIX)}\S+$")
"""A stream batch's counts' mark (`TALLIED#{first record's id}`): a key each, written once."""
_WAIT_DAY = re.compile(rf"^({re.escape(keys.WAIT_PREFIX)}.*)#\d{{13}}#(\d+)$")
"""A write shard of a day of waiting counts (`WAIT#{scope}#{day}#{n}`): the family is the
day's shards."""


def _family(key: PartitionKey) -> PartitionKey:
    value = _MARK.sub(f"{keys.TALLIED_PREFIX}{{batch}}", key.value)
    value = _WAIT_DAY.sub(r"\1#{day}#\2", value)
    return PartitionKey(key.where, re.sub(r"#\d+$", "#n", _BOOK_SHARD.sub(r"\1n", value)))


def _line(c: Ceiling) -> str:
    shares = f"{c.write_share:.1%} of writes, {c.read_share:.1%} of reads"
    return f"{shares}; ceiling: {c.jobs_per_second:,.0f} jobs/s"


def describe_family(
    load: PartitionLoad, jobs: int, prefix: str, keys: int, *, where: str | None = None
) -> str:
    """A family of `keys` keys one space's writes spread over by a hash of the job id
    (the job partitions `J#{space}#n`; `where`: only those of the
    table or of that index): each takes its even share at thousands of jobs a second."""

    ceiling, writes, reads = family_ceiling(load, jobs, prefix, keys, where=where)
    w_share = writes / (sum(load.writes.values()) or 1)
    r_share = reads / (sum(load.reads.values()) or 1)
    family = f"{prefix}n ({where})" if where else f"{prefix}n"
    return (
        f"  the space's own {family}, {keys} key(s): {w_share:.1%} of writes, {r_share:.1%} of reads"
        f" ({writes / jobs:.1f} write units a job); each at {TARGET_JOBS_PER_S / ceiling:.0%} of its limit"
        f" at {TARGET_JOBS_PER_S:,} jobs/s, ceiling: {ceiling:,.0f} jobs/s"
    )


def family_ceiling(
    load: PartitionLoad, jobs: int, prefix: str, keys: int, *, where: str | None = None
) -> tuple[float, float, float]:
    """The ceiling of a family of `keys` keys at its even share (`describe_family`), and
    the family's write and read units in all."""

    def of(key: PartitionKey) -> bool:
        return key.value.startswith(prefix) and (where is None or key.where == where)

    writes = sum(w for k, w in load.writes.items() if of(k))
    reads = sum(r for k, r in load.reads.items() if of(k))
    per_job = max(writes / WRITE_LIMIT, reads / READ_LIMIT) / keys / jobs
    return (1 / per_job if per_job else float("inf")), writes, reads


REQUEST_MS = 50
"""ESTIMATE: how long a function takes over one request under load (a claim that finds
work answers at once), which sets how many functions are warm at a rate."""
TOKEN_READ_UNITS = 0.5
"""A token item is small and read eventually consistently (`shared.auth.Tokens`)."""


def describe_token_load(*, requests_per_job: float, jobs_per_second: int = TARGET_JOBS_PER_S) -> str:
    """The token item `T`, which every space shares: each warm function reads a token once
    every `CACHE_MS`, so its load follows from how many functions are warm, not from the
    jobs; here every function serves one token of its own (several workers sharing a token
    cost less)."""
    requests, functions, units = _token_load(requests_per_job, jobs_per_second)
    ceiling = token_ceiling(requests_per_job=requests_per_job)
    return (
        f"  shared by every space: T (table), 1 key(s): each warm function reads its token once every"
        f" {CACHE_MS / 1_000:g} s; at {jobs_per_second:,} jobs/s, {requests:,.0f} requests/s keep about"
        f" {functions:,.0f} functions warm at {REQUEST_MS} ms a request: {units:,.0f} read units/s,"
        f" {units / READ_LIMIT:.0%} of its limit, ceiling: {ceiling:,.0f} jobs/s"
    )


BOOKS = 3
"""The books that file by time slot: leases, deadlines, timers (`shared.store.books`)."""
MARKS_PER_SLOT = 2
"""A process marks a slot of a book at most twice (`shared.store.books.PER_SHARD`)."""


def describe_slot_maps(*, processes: int = 1_000, slot_s: int = 60) -> str:
    """The books' slot maps `BOOKS`, which every space shares: each process that files in a
    book marks each slot at most twice, and a tick reads them in one query, so their load
    follows the processes filing, never the jobs."""
    writes = processes * BOOKS * MARKS_PER_SLOT / slot_s
    return (
        f"  shared by every space: {keys.BOOK_MAPS} (table), 1 key: the books' slot maps, at most"
        f" {MARKS_PER_SLOT} marks a {slot_s} s slot by each process filing in each of {BOOKS} books,"
        f" and one query a tick; at {processes:,} processes, {writes:,.0f} write units/s,"
        f" {writes / WRITE_LIMIT:.0%} of its limit, whatever the jobs"
    )


def _token_load(requests_per_job: float, jobs_per_second: float) -> tuple[float, float, float]:
    """(requests a second, functions warm, read units a second of `T`) at a rate."""
    requests = jobs_per_second * requests_per_job
    functions = requests * REQUEST_MS / 1_000
    return requests, functions, functions * TOKEN_READ_UNITS * 1_000 / CACHE_MS


def token_ceiling(*, requests_per_job: float) -> float:
    """The jobs a second before the token item `T` hits its read limit (`describe_token_load`)."""
    units = _token_load(requests_per_job, TARGET_JOBS_PER_S)[2]
    return TARGET_JOBS_PER_S * READ_LIMIT / units if units else float("inf")
