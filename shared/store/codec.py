"""Jobs to items and back, and transitions to conditional update expressions."""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from typing import Any

from shared.job import (
    AT_LEAST_ONCE,
    ATTEMPTS_KEPT,
    Attempt,
    Backoff,
    Callback,
    Fired,
    Job,
    JobStatus,
    Place,
    Progress,
)
from shared.machine import Guard, Hold, Transition, Tried
from shared.store import keys
from shared.store.dynamo import Item

GUARANTEE = "guarantee"
"""The job item's guarantee, present only when not AT_LEAST_ONCE."""
EXPIRES_AT = "expiresAt"
"""The job item's deadline (ms), present only on a job that has one."""
LAPSED = "lapsedAttempt"
"""The job item's last attempt whose lease ended without a report (present once one has)."""
HOLDS = "holds"
"""The job item's string set of the holds it has (`shared.machine.Hold` tags)."""
TRACEPARENT = "traceparent"
"""The job item's W3C trace context, present only on a job created with one."""

TRIED = "try"
"""The job item's record of an attempt's start, one attribute a slot
(`try{attempt % ATTEMPTS_KEPT}`): a map of short names (the item changes on every
transition, so each byte is paid for on each write), `n` the attempt and `s` its start."""
ENDED = "end"
"""The job item's record of an attempt's end, beside its start (`end{slot}`): `n` the
attempt, `e` its end, `o` its outcome, `x` its error. Apart from the start, so that each
write sets a whole top-level attribute (a nested path would leave `emit dev`'s fast
embedded DynamoDB for moto's slow one); an end is paired with its start by `n`."""


def tried_attribute(attempt: int, kind: str = TRIED) -> str:
    return f"{kind}{attempt % ATTEMPTS_KEPT}"


def attempts_of(item: Item) -> tuple[Attempt, ...]:
    """The attempts the item keeps a record of, oldest first."""
    ends = {
        int(r["n"]): r for r in (item.get(tried_attribute(slot, ENDED)) for slot in range(ATTEMPTS_KEPT)) if r
    }
    starts = sorted(
        (r for r in (item.get(tried_attribute(slot)) for slot in range(ATTEMPTS_KEPT)) if r),
        key=lambda r: int(r["n"]),
    )
    out = []
    for start in starts:
        n = int(start["n"])
        end = ends.get(n) or {}
        out.append(Attempt(n, int(start["s"]), _int(end.get("e")), end.get("o"), end.get("x")))
    return tuple(out)


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def _tried(update: UpdateBuilder, tried: Tried) -> None:
    """An attempt's record: a start writes its slot whole (over the record of the attempt
    `ATTEMPTS_KEPT` before), an end its end slot whole, a give-back removes the start."""
    if tried.undone:
        update.set(tried_attribute(tried.attempt), None)
    elif tried.started_at_ms is not None:
        update.set(tried_attribute(tried.attempt), {"n": tried.attempt, "s": tried.started_at_ms})
    else:
        assert tried.ended_at_ms is not None and tried.outcome is not None
        end: dict[str, Any] = {"n": tried.attempt, "e": tried.ended_at_ms, "o": tried.outcome}
        if tried.error is not None:
            end["x"] = tried.error
        update.set(tried_attribute(tried.attempt, ENDED), end)


# Domain field -> item attribute, for the fields transitions change.
_ATTRIBUTE = {
    "attempt": "attempt",
    "failures": "failures",
    "lease_until_ms": "leaseUntilMs",
    "ready_at_ms": "readyAtMs",
    "finished_at_ms": "finishedAtMs",
    "lapsed_attempt": LAPSED,
}


def ttl_seconds(purge_at_ms: int) -> int:
    return math.ceil(purge_at_ms / 1000)


def purged(item: Item, now_ms: int) -> bool:
    """Past its retention: gone for every read, even before TTL has removed the item.
    (`JobStore.page` asks it of each item it lists.)"""
    ttl = item.get("ttl")
    return ttl is not None and ttl * 1000 <= now_ms


def ready_sort(place: Place, job_id: str) -> str:
    """The job's sort key in its ready partition: its lane, then its order or ready time."""
    if place.due:
        assert place.order is not None
        return keys.due_sort(place.order, job_id)
    return keys.later_sort(place.ready_at_ms, job_id)


def ready_lane(job: Job, width: int = keys.READY_SHARDS) -> str:
    """The ready partition a job waits in for its life: its key's lane for a job with a
    `concurrencyKey` (`shared.store.keyed`), else one of its name's `width` ready shards
    (`shared.spread`)."""
    if job.concurrency_key is not None:
        return keys.key_lane(job.space, job.name, job.concurrency_key)
    return keys.ready_partition(job.space, job.name, job.id, width)


def job_item(
    job: Job,
    stored: dict[str, Any],
    place: Place,
    width: int = keys.READY_SHARDS,
    holds: AbstractSet[str] = frozenset(),
) -> Item:
    """The item for a new job, waiting at `place` (`ready_lane`); `stored` holds the packed
    payload attributes, `holds` the holds it is created with (its space's `maxInFlight`)."""
    item: Item = keys.job(job.space, job.id) | {
        "name": job.name,
        "status": job.status.value,
        "attempt": job.attempt,
        "failures": job.failures,
        "maxAttempts": job.max_attempts,
        "timeoutMs": job.timeout_ms,
        "backoff": {
            "kind": job.backoff.kind,
            "baseMs": job.backoff.base_ms,
            "maxMs": job.backoff.max_ms,
            "jitter": job.backoff.jitter,
        },
        "createdAtMs": job.created_at_ms,
        "runAtMs": job.run_at_ms,
        "readyAtMs": job.ready_at_ms,
        "lineCount": 0,
        "eventCount": 0,
        # gsk comes and goes, so only pending jobs are indexed. A job written past its rest
        # shard is moved to it when claimed (`JobStore.claim`), to wait there if ever again.
        "gpk": ready_lane(job, width),
        "gsk": ready_sort(place, job.id),
        "priority": job.priority,
        **stored,
    }
    if holds:
        item[HOLDS] = set(holds)
    if job.key is not None:
        item["key"] = job.key
    if job.concurrency_key is not None:
        item["concurrencyKey"] = job.concurrency_key
    if job.guarantee != AT_LEAST_ONCE:
        item[GUARANTEE] = job.guarantee  # the default is left out: most items stay as small
    if job.expires_at_ms is not None:
        item[EXPIRES_AT] = job.expires_at_ms  # only when set: claims' guard costs the rest nothing
    if job.callback is not None:
        item["callback"] = {"url": job.callback.url, "headers": job.callback.headers}
    if job.retry_of is not None:
        item["retryOf"] = job.retry_of
    if job.schedule is not None:
        item["schedule"] = {"id": job.schedule.schedule_id, "atMs": job.schedule.at_ms}
    if job.traceparent is not None:
        item[TRACEPARENT] = job.traceparent  # only when set: most jobs carry no trace
    return item


def job_from_item(
    space: str, item: Item, *, payload: Any = None, result: Any = None, error: str | None = None
) -> Job:
    backoff = item["backoff"]
    progress = item.get("progress")
    callback = item.get("callback")
    ttl = item.get("ttl")
    fired = item.get("schedule")
    return Job(
        id=item["sk"],
        space=space,
        name=item["name"],
        status=JobStatus(item["status"]),
        attempt=item["attempt"],
        failures=item["failures"],
        max_attempts=item["maxAttempts"],
        timeout_ms=item["timeoutMs"],
        backoff=Backoff(backoff["kind"], backoff["baseMs"], backoff["maxMs"], backoff["jitter"]),
        created_at_ms=item["createdAtMs"],
        run_at_ms=item["runAtMs"],
        ready_at_ms=item.get("readyAtMs"),
        lease_until_ms=item.get("leaseUntilMs"),
        finished_at_ms=item.get("finishedAtMs"),
        purge_at_ms=ttl * 1000 if ttl is not None else None,
        key=item.get("key"),
        priority=item.get("priority", 0),
        concurrency_key=item.get("concurrencyKey"),
        guarantee=item.get(GUARANTEE, AT_LEAST_ONCE),
        expires_at_ms=item.get(EXPIRES_AT),
        progress=Progress(progress["percent"], progress.get("message")) if progress else None,
        callback=Callback(callback["url"], callback.get("headers", {})) if callback else None,
        error=error,
        line_count=item.get("lineCount", 0),
        event_count=item.get("eventCount", 0),
        payload=payload,
        result=result,
        retry_of=item.get("retryOf"),
        schedule=Fired(fired["id"], int(fired["atMs"])) if fired else None,
        lapsed_attempt=item.get(LAPSED),
        holds=frozenset(item.get(HOLDS) or ()),
        traceparent=item.get(TRACEPARENT),
        attempts=attempts_of(item),
    )


def progress_attribute(progress: Progress) -> dict[str, Any]:
    """The job item's `progress` map."""
    if progress.message is None:
        return {"percent": progress.percent}
    return {"percent": progress.percent, "message": progress.message}


def approximate_size(value: Any) -> int:
    """Bytes an item (or attribute value) takes under DynamoDB's sizing, closely enough to
    budget the job item: names and strings by UTF-8 length, numbers by digits."""
    if isinstance(value, dict):
        return 3 + sum(len(k.encode()) + approximate_size(v) + 1 for k, v in value.items())
    if isinstance(value, list):
        return 3 + sum(approximate_size(v) + 1 for v in value)
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, bool) or value is None:
        return 1
    return len(str(value)) // 2 + 2


class UpdateBuilder:
    """Builds one UpdateItem: SET/REMOVE/ADD clauses and a condition, with named placeholders."""

    def __init__(self) -> None:
        self.sets: list[str] = []
        self.removes: list[str] = []
        self.adds: list[str] = []
        self.deletes: list[str] = []
        self.conditions: list[str] = ["attribute_exists(pk)"]
        self.names: dict[str, str] = {}
        self.vals: dict[str, Any] = {}

    def _name(self, attribute: str) -> str:
        placeholder = f"#{attribute}"
        self.names[placeholder] = attribute
        return placeholder

    def _value(self, value: Any) -> str:
        placeholder = f":v{len(self.vals)}"
        self.vals[placeholder] = value
        return placeholder

    def set(self, attribute: str, value: Any) -> None:
        if value is None:
            self.removes.append(self._name(attribute))
        else:
            self.sets.append(f"{self._name(attribute)} = {self._value(value)}")

    def add(self, attribute: str, amount: int | AbstractSet[str]) -> None:
        """ADD a number to a counter, or strings to a string set."""
        self.adds.append(f"{self._name(attribute)} {self._value(amount)}")

    def copy(self, attribute: str, source: str) -> None:
        """SET `attribute` to the item's `source`, when it has one (else leave it)."""
        self.sets.append(
            f"{self._name(attribute)} = if_not_exists({self._name(source)}, {self._name(attribute)})"
        )

    def delete(self, attribute: str, members: AbstractSet[str]) -> None:
        """DELETE strings from a string set (an emptied set is removed)."""
        self.deletes.append(f"{self._name(attribute)} {self._value(members)}")

    def require_set(self, attribute: str, members: AbstractSet[str]) -> None:
        """The string set must be exactly `members` (absent when empty)."""
        name = self._name(attribute)
        if not members:
            self.conditions.append(f"attribute_not_exists({name})")
            return
        self.conditions.append(f"size({name}) = {self._value(len(members))}")
        self.conditions += [f"contains({name}, {self._value(m)})" for m in sorted(members)]

    def require(self, attribute: str, op: str, value: Any) -> None:
        self.conditions.append(f"{self._name(attribute)} {op} {self._value(value)}")

    def require_absent(self, attribute: str) -> None:
        self.conditions.append(f"attribute_not_exists({self._name(attribute)})")

    def require_absent_or(self, attribute: str, op: str, value: Any) -> None:
        """The attribute is absent, or compares to `value` as `op` says."""
        name = self._name(attribute)
        self.conditions.append(f"(attribute_not_exists({name}) OR {name} {op} {self._value(value)})")

    def require_in(self, attribute: str, options: list[Any]) -> None:
        placeholders = ", ".join(self._value(v) for v in options)
        self.conditions.append(f"{self._name(attribute)} IN ({placeholders})")

    def expression(self) -> str:
        parts = []
        if self.sets:
            parts.append("SET " + ", ".join(self.sets))
        if self.removes:
            parts.append("REMOVE " + ", ".join(self.removes))
        if self.adds:
            parts.append("ADD " + ", ".join(self.adds))
        if self.deletes:
            parts.append("DELETE " + ", ".join(self.deletes))
        return " ".join(parts)

    def condition(self) -> str:
        return " AND ".join(self.conditions)


def released(transition: Transition, holds: AbstractSet[str]) -> frozenset[str]:
    """The holds of `holds` that `transition` lets go of."""
    return frozenset(t for t in holds if Hold.of(t).kind in transition.lets_go)


def _holds(update: UpdateBuilder, transition: Transition, holds: AbstractSet[str]) -> None:
    """The holds part of a transition's write: exactly `holds` required where it lets go
    of some kind (those of that kind removed), the holds it takes added."""
    if transition.lets_go:
        update.require_set(HOLDS, holds)
        gone = released(transition, holds)
        if gone and gone == holds:
            update.set(HOLDS, None)
        elif gone:
            update.delete(HOLDS, gone)
    if transition.takes:
        update.add(HOLDS, {take.hold.tag for take in transition.takes})


def transition_update(
    space: str,
    job_id: str,
    transition: Transition,
    *,
    callback: bool = False,
    holds: AbstractSet[str] = frozenset(),
) -> UpdateBuilder:
    """The conditional write for `transition`: its changes, guarded by its guard.

    For a transition that finishes the job, `callback` says whether the job has one (the
    write then requires it to be so: a job with a callback is filed in the timer book first,
    `JobStore.apply`).

    For a transition that lets go of holds, `holds` says what the job holds (the write then
    requires exactly that, and gives up those of the kinds it lets go: the counters are
    lowered in the same transaction, `JobStore.apply`). The holds it takes are added."""
    update = UpdateBuilder()
    _holds(update, transition, holds)
    due = transition.callback_due_ms
    update.set("status", transition.to.value)
    for field, value in transition.changes.items():
        if field == "purge_at_ms":
            update.set("ttl", ttl_seconds(value) if value is not None else None)
        elif field == "error":
            continue  # packed by the caller: errors may be long
        else:
            update.set(_ATTRIBUTE[field], value)
    if transition.ready_index == "enter":
        assert transition.place is not None, f"{transition.name} enters the ready index without a place"
        update.set("gsk", ready_sort(transition.place, job_id))
    elif transition.ready_index == "leave":
        update.set("gsk", None)
    if transition.tried is not None:
        _tried(update, transition.tried)
    if due is not None:
        update.conditions.append(f"attribute_{'exists' if callback else 'not_exists'}(#callback)")
        update.names["#callback"] = "callback"
    _guard(update, transition.guard)
    return update


def _guard(update: UpdateBuilder, guard: Guard) -> None:
    """The guard's conditions on the job's own item."""
    update.require_in("status", sorted(s.value for s in guard.statuses))
    if guard.attempt is not None:
        update.require("attempt", "=", guard.attempt)
    if guard.ready_by_ms is not None:
        update.require("readyAtMs", "<=", guard.ready_by_ms)
    if guard.lease_at_most_ms is not None:
        update.require("leaseUntilMs", "<=", guard.lease_at_most_ms)
    if guard.lease_ended_by_ms is not None:
        update.require("leaseUntilMs", "<=", guard.lease_ended_by_ms)
    if guard.guarantee == AT_LEAST_ONCE:
        update.require_absent(GUARANTEE)
    elif guard.guarantee is not None:
        update.require(GUARANTEE, "=", guard.guarantee)
    if guard.unexpired_at_ms is not None:
        update.require_absent_or(EXPIRES_AT, ">", guard.unexpired_at_ms)
    if guard.expired_by_ms is not None:
        update.require(EXPIRES_AT, "<=", guard.expired_by_ms)


def expired(item: Item, now_ms: int) -> bool:
    """Whether the stored job has a deadline, passed by `now_ms`, and is unfinished (the
    `deadline` transition would apply)."""
    at = item.get(EXPIRES_AT)
    return at is not None and at <= now_ms and not JobStatus(item["status"]).is_final
