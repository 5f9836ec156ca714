"""Counts kept from the table's stream: each name's and space's pending and running jobs
(gauges), and per minute what was created, claimed, completed and failed.

The stream's records are counted once each though AWS delivers a batch more than once:
a batch's counts go in one transaction with a mark (`TALLIED#{first record's id}`, kept
a day: the stream's retention) naming the last record they cover. A batch delivered
again finds its mark and counts only the records after the one it names. A batch is
counted whole before any record's effects are applied; one whose effects failed at a
record is sent again from that record, so a second mark goes there, naming the batch's
last record (`mark`), and the retry counts only what came after. (Lambda's bisection of a
failed batch would start a retry at a record no mark names, so the stream's trigger does
not bisect: failed records are reported one by one instead, `infra.constructs.triggers`.)

Keys, and why none is hot:

| item | key | written |
| --- | --- | --- |
| a name's gauges | `CNT#{space}#{name}` | once a batch that moved its jobs |
| the space's gauges | `CNT#{space}` | once a batch that moved its jobs |
| a name's minute | `MIN#{space}#{name}` / `{minute}` | once a batch, that minute |
| jobs waiting since a minute | `WAIT#{scope}#{hour}#{shard}` / `{minute}` | once a batch moving them |
| ... since an hour | `WAITH#{scope}#{shard}` / `{hour}` | the same |

A batch is up to 100 records, so one busy name's items take a transactional write (2
units) per hundred of its records (some 25 jobs), whatever the load: a name's (and a
space's) ceiling is 500 such writes a second on its key, some 12,500 jobs a second. The
waiting counts are the deployment's (spread over `limits.WAIT_SHARDS` shards a batch
picks: 50,000 jobs a second in all) and a watched name's (`shared.store.backlog`: one shard,
the name's ceiling as above).
"""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields

from shared import limits
from shared.store import backlog, keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item, TransactionConflict, serialize, values

MAX_ACTIONS = 100
"""DynamoDB's limit on one transaction's items: a batch touching more goes in several."""
MARK_TTL_S = 25 * 3_600
MINUTE_TTL_S = 3 * 3_600
"""A minute is kept a little over the hour `GET .../metrics` shows."""
WAIT_TTL_MS = 400 * limits.DAY_MS
"""A waiting count outlives any job it counts but one pending for more than a year."""


@dataclass
class Tally:
    """What some records did to one name's jobs: gauges' deltas and the minute's counts."""

    pending: int = 0
    running: int = 0
    created: int = 0
    claimed: int = 0
    completed: int = 0
    failed: int = 0
    """Jobs that ended FAILED or STALLED."""
    cancelled: int = 0

    def add(self, other: Tally) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def gauges(self) -> dict[str, int]:
        return {k: v for k, v in (("pending", self.pending), ("running", self.running)) if v}

    @property
    def minute(self) -> dict[str, int]:
        """The minute item's counts: the events, and the gauges' deltas (from which a past
        minute's gauges are worked back from today's)."""
        counted = {
            "created": self.created,
            "claimed": self.claimed,
            "completed": self.completed,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "dPending": self.pending,
            "dRunning": self.running,
        }
        return {k: v for k, v in counted.items() if v}

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True)
class Counted:
    """One record, as counted: its id (`eventID`), and what it did to which name's jobs
    (`tally` None and no `waits`: nothing to count, the record still takes its place in
    the order)."""

    record_id: str
    space: str = ""
    name: str = ""
    tally: Tally | None = None
    waits: tuple[tuple[int, int], ...] = ()
    """The waiting counts it moves: (minute waited since, +1 or -1)."""
    watched: bool = False
    """Its name is listed under its space's `metrics`: the name's waiting counts move too."""


@dataclass(frozen=True)
class Gauges:
    pending: int = 0
    running: int = 0


@dataclass(frozen=True)
class Minute:
    at_ms: int
    counts: dict[str, int] = field(default_factory=dict)


class TallyStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    # -- counting ------------------------------------------------------------

    def count(self, records: Sequence[Counted], now_ms: int) -> Tally:
        """Count `records` (a batch's, in its order) once each:
        what was counted now (not what a mark showed counted before)."""
        counted, i = Tally(), 0
        while i < len(records):
            end = _chunk_end(records, i)
            chunk = records[i:end]
            marked = self._mark_and_add(chunk, now_ms)
            if marked is None:
                for r in chunk:
                    if r.tally:
                        counted.add(r.tally)
                i = end
                continue
            # Counted before, up to the record its mark names: go on after it.
            at = next((j for j in range(i, len(records)) if records[j].record_id == marked), None)
            if at is None:
                return counted  # its mark covers past this batch's end
            i = at + 1
        return counted

    def _mark_and_add(self, chunk: Sequence[Counted], now_ms: int) -> str | None:
        """One transaction: the chunk's mark, on condition it is new, and its counts. None:
        done; else the last record a mark made before names (nothing written now)."""
        mark = {
            "pk": f"{keys.TALLIED_PREFIX}{chunk[0].record_id}",
            "sk": "-",
            "last": chunk[-1].record_id,
            "ttl": now_ms // 1000 + MARK_TTL_S,
        }
        actions: list[dict[str, object]] = [
            {
                "Put": {
                    "Item": serialize(mark),
                    "ConditionExpression": "attribute_not_exists(pk)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
        ]
        updates = _updates(chunk, now_ms)
        if not updates:
            return None  # nothing to count: no mark needed either
        actions += updates
        for attempt in range(8):
            try:
                self.db.transact(actions)
                return None
            except TransactionConflict as conflict:
                first = conflict.reasons[0] if conflict.reasons else {}
                if first.get("code") == "ConditionalCheckFailed":
                    return str((first.get("item") or {}).get("last", chunk[-1].record_id))
                time.sleep(min(0.02 * 2**attempt, 0.5))  # another batch's transaction on the same items
        raise RuntimeError("the counts' transaction stayed contended; the batch is retried")

    def mark(self, first_id: str, last_id: str, now_ms: int) -> None:
        """Mark records from `first_id` to `last_id` counted: where a retry will start (the
        record a batch failed at), so it counts only what follows `last_id`. A mark there
        already (the start of a chunk) covers it as well."""
        mark = {
            "pk": f"{keys.TALLIED_PREFIX}{first_id}",
            "sk": "-",
            "last": last_id,
            "ttl": now_ms // 1000 + MARK_TTL_S,
        }
        with contextlib.suppress(ConditionFailed):
            self.db.put(mark, condition="attribute_not_exists(pk)")

    # -- reading -------------------------------------------------------------

    def names(self, space: str, names: Iterable[str]) -> dict[str, Gauges]:
        """The gauges of those of `names` ever counted, by name (batches of 100 reads)."""
        prefix = keys.name_counts(space, "")["pk"]
        wanted = [keys.name_counts(space, n) for n in names]
        return {
            str(r["pk"]).removeprefix(prefix): _gauges(r) for r in self.db.batch_get(wanted, consistent=False)
        }

    def spaces(self, spaces: Iterable[str]) -> dict[str, Gauges]:
        """Each space's gauges (one batch read); a space never counted is left out."""
        wanted = [keys.space_counts(s) for s in spaces]
        return {
            str(r["pk"]).removeprefix(keys.COUNT_PREFIX): _gauges(r)
            for r in self.db.batch_get(wanted, consistent=False)
        }

    def minutes(self, space: str, name: str, since_ms: int) -> list[Minute]:
        """The name's minutes from `since_ms` on, oldest first (minutes with nothing left out)."""
        rows, _ = self.db.query(
            "pk = :pk AND sk >= :since",
            vals={":pk": keys.minutes(space, name), ":since": keys.minute_sort(since_ms)},
        )
        return [
            Minute(int(r["sk"]), {k: int(v) for k, v in r.items() if k not in ("pk", "sk", "ttl")})
            for r in rows
        ]


def unfinished(row: Item | None) -> int:
    """A space's unfinished jobs, from its gauges' item (None: never counted)."""
    gauges = _gauges(row) if row is not None else Gauges()
    return gauges.pending + gauges.running


def _gauges(row: Item) -> Gauges:
    """Never below zero: a record lost to the dead-letter queue would leave a count short."""
    return Gauges(max(0, int(row.get("pending") or 0)), max(0, int(row.get("running") or 0)))


def _chunk_end(records: Sequence[Counted], start: int) -> int:
    """Where a chunk from `start` ends: each name adds up to two items, each space one and
    each waiting minute two (its minute's and its hour's) to the transaction (with the
    mark), within `MAX_ACTIONS`."""
    names: set[tuple[str, str]] = set()
    spaces: set[str] = set()
    minutes: set[tuple[str, int]] = set()
    for i in range(start, len(records)):
        r = records[i]
        if r.tally:
            names.add((r.space, r.name))
            spaces.add(r.space)
        for scope in _scopes(r):
            minutes.update((scope, minute) for minute, _ in r.waits)
        if 1 + 2 * len(names) + len(spaces) + 2 * len(minutes) > MAX_ACTIONS:
            return max(i, start + 1)
    return len(records)


def _updates(chunk: Sequence[Counted], now_ms: int) -> list[dict[str, object]]:
    by_name: dict[tuple[str, str], Tally] = {}
    by_space: dict[str, Tally] = {}
    for r in chunk:
        if r.tally:
            by_name.setdefault((r.space, r.name), Tally()).add(r.tally)
            by_space.setdefault(r.space, Tally()).add(r.tally)
    minute = now_ms // limits.MINUTE_MS * limits.MINUTE_MS
    ttl = now_ms // 1000 + MINUTE_TTL_S
    out: list[dict[str, object]] = []
    for (space, name), tally in by_name.items():
        # The version moves with every batch that counts a record of the name, even one
        # whose moves add up to nothing: a recount settles only where it stood still.
        out.append(_add(keys.name_counts(space, name), tally.gauges | {"v": 1}))
        if tally.minute:
            out.append(_add(keys.minute(space, name, minute), tally.minute, ttl=ttl))
    for space, tally in by_space.items():
        if tally.gauges:
            out.append(_add(keys.space_counts(space), tally.gauges))
    for scope, scoped in _waits(chunk).items():
        out += _wait_updates(scope, chunk[0].record_id, scoped)
    return out


def _waits(chunk: Sequence[Counted]) -> dict[str, dict[int, int]]:
    """The chunk's waiting counts' deltas, by scope and minute."""
    waits: dict[str, dict[int, int]] = {}
    for r in chunk:
        for scope in _scopes(r):
            scoped = waits.setdefault(scope, {})
            for minute_ms, delta in r.waits:
                scoped[minute_ms] = scoped.get(minute_ms, 0) + delta
    return waits


def _scopes(r: Counted) -> list[str]:
    """The waiting counts a record moves: the deployment's, and its name's if watched."""
    if not r.waits:
        return []
    return [keys.DEPLOYMENT, keys.name_scope(r.space, r.name)] if r.watched else [keys.DEPLOYMENT]


def _wait_updates(scope: str, first_id: str, waits: dict[int, int]) -> list[dict[str, object]]:
    """A scope's waiting counts' additions, in one write shard (chosen by the chunk's first
    record, so a busy stream spreads over them all): each minute, and its hour. A count
    may go below zero in a shard (a job counted in one and taken out in another); the
    clock adds the shards up (`shared.store.backlog`)."""
    shard = zlib.crc32(first_id.encode()) % backlog.shards(scope)
    hours: dict[int, int] = {}
    out: list[dict[str, object]] = []
    for minute_ms, delta in sorted(waits.items()):
        if delta:
            ttl = (minute_ms + WAIT_TTL_MS) // 1000
            out.append(_add(keys.wait_minute(scope, shard, minute_ms), {"n": delta}, ttl=ttl))
            hour = minute_ms // limits.HOUR_MS * limits.HOUR_MS
            hours[hour] = hours.get(hour, 0) + delta
    for hour, delta in hours.items():
        if delta:
            out.append(
                _add(keys.wait_hour(scope, shard, hour), {"n": delta}, ttl=(hour + WAIT_TTL_MS) // 1000)
            )
    return out


def _add(key: dict[str, str], counts: dict[str, int], *, ttl: int | None = None) -> dict[str, object]:
    names = {f"#{k}": k for k in counts}
    vals: dict[str, object] = {f":{k}": v for k, v in counts.items()}
    expression = "ADD " + ", ".join(f"#{k} :{k}" for k in counts)
    if ttl is not None:
        names["#ttl"] = "ttl"
        vals[":ttl"] = ttl
        expression += " SET #ttl = :ttl"
    return {
        "Update": {
            "Key": serialize(key),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values(vals),
        }
    }
