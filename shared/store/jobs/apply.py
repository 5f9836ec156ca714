"""Transitions: one `shared.machine.Transition` as one conditional write on the job's own
item, or, where it takes or lets go of a hold, one transaction with the counters."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from shared.job import AT_LEAST_ONCE, Job, JobStatus
from shared.machine import Hold, Take, Transition
from shared.store import keys
from shared.store.blobs import PLACES, Packed, pack, replacing
from shared.store.codec import (
    GUARANTEE,
    HOLDS,
    UpdateBuilder,
    job_from_item,
    progress_attribute,
    ready_sort,
    released,
    transition_update,
)
from shared.store.counters import Owner, release_action, take_action
from shared.store.dynamo import ConditionFailed, Item, TransactionConflict, serialize, values
from shared.store.jobs.parts import Parts
from shared.store.jobs.records import Contended, CounterFull, JobConflict, ReportExtras
from shared.store.timers import CALLBACK


class Transitions(Parts):
    def transition(
        self,
        space: str,
        job_id: str,
        transition: Transition,
        *,
        value: Packed | None = None,
        extras: ReportExtras | None = None,
        place: Packed | None = None,
        held: Job | None = None,
        owner: Owner | None = None,
    ) -> Job:
        """Apply one transition as a conditional write (`apply`); answers the job after it,
        without its bodies.

        `value` is a result or an error packed by `pack`, stored beside the change; `extras`
        a report's parts; `place` names where a value kept outside the job item will be
        written (a report's first write, `shared.jobs.report`). `held` is the job as the
        caller read it (the counts it holds, whose they are); `owner` whose counts they are
        where the caller knows only that. Raises JobConflict, carrying the job as it stood;
        CounterFull when a hold the transition takes is at its cap."""
        stored = replacing(value.name, value) if value is not None else None
        if held is not None:
            owner = owner or Owner(held.name, held.concurrency_key)
        item = self.apply(
            space,
            job_id,
            transition,
            extra=_extras(extras, place),
            stored=stored,
            holds=held.holds if held is not None else None,
            owner=owner,
        )
        return job_from_item(space, item)

    def pack(self, space: str, job_id: str, name: str, raw: bytes, *, attempt: int | None = None) -> Packed:
        """A result or an error (`name`), packed where it fits: in the job item, or outside
        it (`Packed.ref`), to keep (`keep_values`) before the transition that names it."""
        return pack(space, job_id, name, raw, attempt=attempt)

    def keep_values(self, values: list[Packed]) -> None:
        """Write the values that live outside the job item (side items, S3 objects), before
        the write that points at them: a job never names a value not there yet."""
        self.blobs.store(values)

    def discard_values(self, space: str, job_id: str, values: list[Packed]) -> None:
        """Remove values kept for a write that was then refused (their places stay named
        on the job, for retention, should this fail)."""
        self.blobs.discard(space, job_id, values)

    def apply(
        self,
        space: str,
        job_id: str,
        transition: Transition,
        *,
        extra: Callable[[UpdateBuilder], None] | None = None,
        stored: dict[str, Any] | None = None,
        held: Item | None = None,
        holds: frozenset[str] | None = None,
        owner: Owner | None = None,
    ) -> Item:
        """Apply one transition as a conditional write; answers the item after it.

        `stored` are packed value attributes (a result, an error) set beside the change;
        `extra` adds report parts (progress, counters) and conditions to the same write.
        `held` is the job's item as the caller read it (for the holds it has and whose
        counters they are), or `holds` what it holds; `owner` whose counters they are where
        the caller knows it.
        Raises JobConflict (a ConditionFailed), carrying the job as it stood, when the guard
        does not hold; CounterFull when a hold the transition takes is at its cap.

        A transition of a job holding nothing it lets go (the usual case: no limits) is one
        plain UpdateItem, which requires the job to hold nothing; refused for holding
        something, it is made again as one transaction with the counters, as a finishing
        write that did not know the job has a callback is made again, filed first.
        """
        callback = transition.has_callback
        if holds is None:
            holds = frozenset((held or {}).get(HOLDS) or ())
        owner = owner or Owner.of(held or {})
        filed = False
        for _ in range(4):
            if callback is True and transition.callback_due_ms is not None and not filed:
                # Before the write that finishes the job: should the stream never record its
                # delivery, the clock does when this comes due (`shared.timers`).
                self.timers.record(space, [(CALLBACK, job_id, transition.callback_due_ms)])
                filed = True
            try:
                return self._write(
                    space,
                    job_id,
                    transition,
                    callback=callback is True,
                    holds=holds,
                    owner=owner,
                    extra=extra,
                    stored=stored,
                )
            except ConditionFailed as failed:
                item = failed.item or {}
                again = False
                if callback is None and transition.callback_due_ms is not None and item.get("callback"):
                    callback, again = True, True
                stood = frozenset(item.get(HOLDS) or ())
                if transition.lets_go and item and stood != holds and _guard_allows(transition, item):
                    holds, owner, again = stood, Owner.of(item) or owner, True
                if not again:
                    raise JobConflict(space, failed.item) from None
        raise JobConflict(space, None)

    def _write(
        self,
        space: str,
        job_id: str,
        transition: Transition,
        *,
        callback: bool,
        holds: frozenset[str],
        owner: Owner | None,
        extra: Callable[[UpdateBuilder], None] | None,
        stored: dict[str, Any] | None,
    ) -> Item:
        update = transition_update(space, job_id, transition, callback=callback, holds=holds)
        for attribute, value in (stored or {}).items():
            update.set(attribute, value)
        if extra is not None:
            extra(update)
        key = keys.job(space, job_id)
        gone = released(transition, holds) if transition.lets_go else frozenset()
        if not gone and not transition.takes:
            return self.db.apply(key, update, returns="ALL_NEW")
        assert owner is not None, f"{transition.name} changes a count of a job whose name is unknown"
        # A job back in its key's lane gives the key's entry a head if it had none.
        place = transition.place if transition.to == JobStatus.PENDING else None
        back = (ready_sort(place, job_id), place.ready_at_ms) if place is not None else None
        # A key slot let go lists the key again, within its name's width now.
        width = self.widths(space, owner.name) if owner.concurrency_key is not None else keys.READY_SHARDS
        counters = [release_action(space, owner, Hold.of(tag), back, width=width) for tag in sorted(gone)]
        counters += [take_action(space, owner, take) for take in transition.takes]
        self._transact_counted(_update_action(key, update), counters, transition.takes)
        if back is not None and owner.concurrency_key is not None:
            # Only the key's place in the order depends on this write: it may go first now.
            self.key_entries.lower(space, owner.name, owner.concurrency_key, gsk=back[0], ready_at_ms=back[1])
        # A transaction answers nothing: the item after it is read (strongly consistent).
        return self.db.get(key) or {}

    def _transact_counted(
        self, job: dict[str, Any], counters: list[dict[str, Any]], takes: tuple[Take, ...]
    ) -> None:
        """The job's write and its counters' in one transaction, again while another one
        touches the same items."""
        for _ in range(16):
            try:
                self.db.transact([job, *counters])
                return
            except TransactionConflict as conflict:
                reasons = conflict.reasons
                if reasons[0]["code"] == "ConditionalCheckFailed":
                    raise ConditionFailed(reasons[0]["item"]) from None
                taken = reasons[len(reasons) - len(takes) :]
                for take, reason in zip(takes, taken, strict=True):
                    if reason["code"] == "ConditionalCheckFailed":
                        raise CounterFull(take.hold) from None
                codes = {str(r["code"]) for r in reasons}
                if codes - {"None", "TransactionConflict"}:
                    raise RuntimeError(f"a counted transition was refused: {sorted(codes)}") from None
        raise Contended("a counted transition stayed contended; try again")


def _extras(extras: ReportExtras | None, place: Packed | None) -> Callable[[UpdateBuilder], None] | None:
    """A report's parts as additions to its transition's write: progress, line and event
    counts (an event only while the job's events are not full), a value's place."""
    if extras is None and place is None:
        return None

    def parts(update: UpdateBuilder) -> None:
        if place is not None:
            update.add(PLACES, {str(place.ref)})
        if extras is None:
            return
        if extras.progress is not None:
            update.set("progress", progress_attribute(extras.progress))
        if extras.lines:
            update.add("lineCount", extras.lines)
        if extras.event:
            update.add("eventCount", 1)
            update.require("eventCount", "<", extras.max_events)

    return parts


def with_takes(transition: Transition, *takes: Take) -> Transition:
    return dataclasses.replace(transition, takes=takes)


def _update_action(key: dict[str, str], update: UpdateBuilder) -> dict[str, Any]:
    """An UpdateBuilder's write as a transaction's action."""
    action: dict[str, Any] = {
        "Key": serialize(key),
        "UpdateExpression": update.expression(),
        "ConditionExpression": update.condition(),
        "ExpressionAttributeNames": update.names,
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if update.vals:
        action["ExpressionAttributeValues"] = values(update.vals)
    return {"Update": action}


def _guard_allows(transition: Transition, item: Item) -> bool:
    """Whether the stored job passes the guard's status, attempt and guarantee (so a refusal
    was for something else: its holds, or its callback)."""
    guard = transition.guard
    if item.get("status") not in {s.value for s in guard.statuses}:
        return False
    if guard.guarantee is not None and item.get(GUARANTEE, AT_LEAST_ONCE) != guard.guarantee:
        return False
    return guard.attempt is None or item.get("attempt") == guard.attempt
