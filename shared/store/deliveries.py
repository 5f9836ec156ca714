"""Callback delivery items: one per finished job that has a callback.

The job item never changes once the job has finished, so what happens to its callback is
kept beside it. When a delivery is next due is on its item (`nextAtMs`); the clock finds it
through the timer book (`shared.timers`): a job that finishes with a callback is filed
there by the write that finishes it (a grace later: should the stream never record its
delivery, the clock does), and a sender that will try again files its next try.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import NamedTuple

from shared import limits
from shared.store import keys
from shared.store.codec import UpdateBuilder, ttl_seconds
from shared.store.dynamo import ConditionFailed, Dynamo, Item


@dataclass(frozen=True)
class Attempt:
    """An attempt one sender holds (`DeliveryStore.take`): which try of the delivery it is
    (its result is recorded for that one alone), and when the first try was made (a
    delivery is given up a day after)."""

    number: int
    first_at_ms: int


REMOVED = "REMOVED"
"""A tombstone's state: the job was removed by retention."""
TOMBSTONE_MS = 2 * limits.DAY_MS


class DeliveryStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def start(self, space: str, job_id: str, now_ms: int) -> bool:
        """Record that the job's callback is due now. True while it is pending (recorded
        now, or already by a record seen before); False when it was recorded and is over:
        delivered, given up, or its job removed (a record replayed late starts nothing)."""
        item = keys.delivery(space, job_id) | {
            "space": space,
            "jobId": job_id,
            "state": "PENDING",
            "attempts": 0,
            "firstAtMs": now_ms,
            "nextAtMs": now_ms,
        }
        pending = True
        try:
            self.db.put(item, condition="attribute_not_exists(pk)")
        except ConditionFailed as failed:
            pending = failed.item is None or failed.item.get("state") == "PENDING"
        return pending

    def get(self, space: str, job_id: str) -> Item | None:
        return self.db.get(keys.delivery(space, job_id))

    def take(self, space: str, job_id: str, now_ms: int, hold_ms: int) -> Attempt | None:
        """Hold the next attempt for one sender: only one sends at a time, and a sender
        that crashed mid-attempt lets the hold run out so the attempt is made again. None:
        not due, or held by another sender."""
        update = UpdateBuilder()
        update.add("attempts", 1)
        update.set("sendingUntilMs", now_ms + hold_ms)
        update.require("state", "=", "PENDING")
        update.require("nextAtMs", "<=", now_ms)
        update.conditions.append("(attribute_not_exists(#sendingUntilMs) OR #sendingUntilMs < :now)")
        update.names["#sendingUntilMs"] = "sendingUntilMs"
        update.vals[":now"] = now_ms
        try:
            held = self.db.apply(keys.delivery(space, job_id), update, returns="ALL_NEW")
        except ConditionFailed:
            return None
        return Attempt(int(held["attempts"]), int(held["firstAtMs"]))

    def record(
        self,
        space: str,
        job_id: str,
        *,
        attempt: int,
        state: str,
        next_at_ms: int | None,
        status: int | None,
        error: str | None,
        now_ms: int,
    ) -> None:
        """Write one attempt's result; only the sender holding that attempt may."""
        update = UpdateBuilder()
        update.set("state", state)
        update.set("lastAttemptAtMs", now_ms)
        update.set("lastStatus", status)
        update.set("lastError", error)
        update.set("sendingUntilMs", None)
        if state == "PENDING" and next_at_ms is not None:
            update.set("nextAtMs", next_at_ms)
        elif state == "DELIVERED":
            update.set("deliveredAtMs", now_ms)
        update.require("attempts", "=", attempt)
        update.require("state", "=", "PENDING")
        # A failed condition: another sender's hold ran out and it took a later attempt;
        # its result stands.
        with contextlib.suppress(ConditionFailed):
            self.db.apply(keys.delivery(space, job_id), update)

    def bury(self, space: str, job_id: str, now_ms: int) -> None:
        """The job is gone: leave a tombstone in place of its delivery, so a finish record
        replayed after the removal neither sends again nor records a delivery that nothing
        would remove. It outlives the stream's 24 h of records, then TTL removes it."""
        self.db.put(
            keys.delivery(space, job_id)
            | {
                "space": space,
                "jobId": job_id,
                "state": REMOVED,
                "ttl": ttl_seconds(now_ms + TOMBSTONE_MS),
            }
        )

    # -- reads: a job's delivery as the API shows it ------------------------------------

    def state(self, space: str, job_id: str) -> DeliveryState | None:
        """Where the job's callback delivery stands (None: no record yet)."""
        item = self.db.get(keys.delivery(space, job_id))
        if item is None:
            return None
        return DeliveryState(
            state=item["state"],
            attempts=item.get("attempts", 0),
            last_status=item.get("lastStatus"),
            last_error=item.get("lastError"),
            last_attempt_at_ms=item.get("lastAttemptAtMs"),
            delivered_at_ms=item.get("deliveredAtMs"),
            next_at_ms=item.get("nextAtMs"),
        )


class DeliveryState(NamedTuple):
    """A callback delivery's record: PENDING (until delivered or given up), DELIVERED,
    GAVE_UP; REMOVED once its job is (a tombstone)."""

    state: str
    attempts: int
    last_status: int | None = None
    """The receiver's HTTP status, when it answered."""
    last_error: str | None = None
    last_attempt_at_ms: int | None = None
    delivered_at_ms: int | None = None
    next_at_ms: int | None = None
    """Pending: when it is tried next."""
