"""Inserts: new jobs written plainly, in transactions with their side items, with a place
taken from a reservation on their space's count, or holding an item of their own (an
idempotency key, a retry mark)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from shared.machine import Hold
from shared.store import keys
from shared.store.codec import approximate_size, job_item, ready_sort
from shared.store.dynamo import ConditionFailed, Item, TransactionConflict, serialize, values
from shared.store.jobs.parts import Parts
from shared.store.jobs.records import Inserted, KeyHolder, NewRecord, Reservation
from shared.store.table import TTL_ATTRIBUTE


class Inserts(Parts):
    def insert(
        self,
        space: str,
        records: list[NewRecord],
        *,
        key_released: Callable[[KeyHolder], bool],
        reservation: Reservation | None = None,
        per_key: Mapping[str, int | None] | None = None,
    ) -> list[Inserted]:
        """Store new jobs. A job with a key takes the key in the same transaction as it is
        written, so two racing creates with one key make one job; `key_released` says
        whether the job holding a key has let it go.

        A payload in a side item is written in the job's own transaction, so a crash can
        never leave one without its job (at twice the writes: a transaction's price); a
        payload in the job item goes in a plain batch. An S3 payload is written first: an
        object whose job never came is left to the bucket's lifecycle rule.

        Under a `reservation` (the space has a `maxInFlight`) every job is written holding its
        place in the count, in a transaction that takes that place from the reservation: a
        job is never counted without existing, nor exists uncounted.

        A retry (`job.retry_of`) takes its old job's retry mark the same way, so racing
        retries of one job make one new job; a mark is never released.

        A job with a `concurrencyKey` waits in its key's lane: its key's entry is made to find
        it first (`_enter_keys`), with `per_key` each name's `perKeyConcurrency`.

        Jobs with a deadline are filed in the deadline book first (one bucket for them all),
        so the clock finds every one of them that comes to exist."""
        self.deadlines.record(
            space, [(r.job.id, r.job.expires_at_ms) for r in records if r.job.expires_at_ms is not None]
        )
        self.blobs.store([r.payload for r in records if r.payload.s3_key is not None])
        self._enter_keys(space, records, per_key or {})
        plain = [r for r in records if r.job.key is None and r.job.retry_of is None and not r.once]
        self._write_plain(plain, reservation)
        return [self._insert_one(space, r, key_released, reservation) for r in records]

    def _write_plain(self, plain: list[NewRecord], reservation: Reservation | None) -> None:
        """Jobs that hold no item of their own: in one batch, but for those written with a
        side item or taking their place from a `reservation`, in transactions."""
        if reservation is not None:
            every = [_new_items(r, _holds(reservation)) for r in plain]
            for group in transaction_groups(every, actions=TRANSACTION_ACTIONS - 1):
                self._transact_new(
                    [_put(item) for items in group for item in items] + [reservation.use(len(group))]
                )
            return
        self.db.batch_put([_item(r) for r in plain if r.payload.side_item is None])
        with_side = [_new_items(r) for r in plain if r.payload.side_item is not None]
        for group in transaction_groups(with_side):
            self._transact_new([_put(item) for items in group for item in items])

    def _insert_one(
        self,
        space: str,
        record: NewRecord,
        key_released: Callable[[KeyHolder], bool],
        reservation: Reservation | None,
    ) -> Inserted:
        """A job that holds an item of its own, or whose id is fixed, written now; any other
        was written with the plain ones."""
        if record.job.key is not None or record.job.retry_of is not None:
            return self._insert_keyed(space, record, key_released, reservation)
        if record.once:
            return self._insert_once(record, reservation)
        return Inserted(record.job.id, True)

    def _insert_once(self, record: NewRecord, reservation: Reservation | None) -> Inserted:
        """A job whose id is fixed (a notice), written unless an item has its key: one
        conditional put, or, with a count to take or a side item to write, one transaction in
        which the job item's own condition decides. A refusal is DUPLICATE with that id.

        An S3 payload was written first under the job's id: on a refusal it is the existing
        job's own (the same id, the same bytes), so it stays."""
        assert record.once and record.job.key is None
        condition = "attribute_not_exists(pk)"
        if reservation is None and record.payload.side_item is None:
            try:
                self.db.put(_item(record), condition=condition)
            except ConditionFailed:
                return Inserted(record.job.id, False)
            return Inserted(record.job.id, True)
        job, *side = _new_items(record, _holds(reservation))
        actions = [
            {"Put": {"Item": serialize(job), "ConditionExpression": condition}},
            *map(_put, side),
            *_counted(reservation),
        ]
        for _ in range(8):
            try:
                self.db.transact(actions)
                return Inserted(record.job.id, True)
            except TransactionConflict as conflict:
                codes = {str(r["code"]) for r in conflict.reasons}
                if codes - {"None", "ConditionalCheckFailed", "TransactionConflict"}:
                    raise RuntimeError(f"job insert refused: {sorted(codes)}") from None
                if str(conflict.reasons[0]["code"]) == "ConditionalCheckFailed":
                    return Inserted(record.job.id, False)
        raise RuntimeError(f"the insert of job {record.job.id} stayed contended; try again")

    def _enter_keys(self, space: str, records: list[NewRecord], per_key: Mapping[str, int | None]) -> None:
        """Before keyed jobs are written, each key's entry is moved to the first of them (if it
        goes first) and listed if the key has room: one read a key, and a write only when
        something changes. (A crash before the jobs are written leaves an entry with nothing
        new behind it, which claims clear; never a job its key's entry does not lead to.)"""
        first: dict[tuple[str, str], NewRecord] = {}
        for record in records:
            job = record.job
            if job.concurrency_key is None:
                continue
            at = (job.name, job.concurrency_key)
            if at not in first or _sort_key(record) < _sort_key(first[at]):
                first[at] = record
        for (name, key), record in first.items():
            self.key_entries.enter(
                space,
                name,
                key,
                gsk=_sort_key(record),
                ready_at_ms=record.place.ready_at_ms,
                priority=record.job.priority,
                cap=per_key.get(name),
                width=record.width,
            )

    def _transact_new(self, actions: list[dict[str, Any]]) -> None:
        """Write new items in one transaction, again while another one touches them."""
        for _ in range(8):
            try:
                self.db.transact(actions)
                return
            except TransactionConflict as conflict:
                codes = {str(r["code"]) for r in conflict.reasons}
                if codes - {"None", "TransactionConflict"}:
                    raise RuntimeError(f"job insert refused: {sorted(codes)}") from None
        raise RuntimeError("a job insert stayed contended; try again")

    def _insert_keyed(
        self,
        space: str,
        record: NewRecord,
        key_released: Callable[[KeyHolder], bool],
        reservation: Reservation | None,
    ) -> Inserted:
        """Write a job that holds an item of its own: its idempotency key, or the retry
        mark of the job it retries. Lost to an earlier holder: that holder's job."""
        job = record.job
        key, marked, released = self._own_item(space, record, key_released)
        rest = [*map(_put, _new_items(record, _holds(reservation))), *_counted(reservation)]
        taken_from: str | None = None
        for _ in range(8):
            # Take a free key, or, once its holder has let it go, take it from that holder
            # only: of two creates racing for a released key, one wins and one sees it.
            try:
                self.db.transact([_put_key(key | {"jobId": job.id} | marked, taken_from), *rest])
                return Inserted(job.id, True)
            except TransactionConflict as conflict:
                if not _key_refused(conflict):
                    continue  # another transaction touched the key at the same time: try again
                holder = conflict.reasons[0]["item"] or self.db.get(key)
            if holder is None:
                taken_from = None
                continue
            if not released(holder):
                if record.payload.s3_key is not None:
                    # This job will never be: its S3 payload, stored first, has nobody to remove it.
                    self.blobs.delete(space, job.id, _item(record))
                return Inserted(holder["jobId"], False)
            taken_from = holder["jobId"]
        raise RuntimeError(f"the key of job {job.id} stayed contended; try again")

    def _own_item(
        self, space: str, record: NewRecord, key_released: Callable[[KeyHolder], bool]
    ) -> tuple[Item, Item, Callable[[Item], bool]]:
        """The item a job holds of its own (its idempotency key, or its old job's retry mark):
        its key, what the job writes to it beside `jobId`, and whether a holder let it go."""
        job = record.job
        if job.key is not None:

            def released(holder: Item) -> bool:
                return key_released(KeyHolder.of(holder, self.db.get(keys.job(space, holder["jobId"]))))

            return keys.idempotency_key(space, job.key), {}, released
        assert job.retry_of is not None
        marked: Item = {TTL_ATTRIBUTE: record.retry_ttl} if record.retry_ttl is not None else {}
        return keys.retry_marker(space, job.retry_of), marked, _never_released


def _never_released(holder: Item) -> bool:
    """A retry mark is never released."""
    return False


def _put_key(item: Item, taken_from: str | None) -> dict[str, Any]:
    """Put a job's own item if no job holds it, or if the job `taken_from` (which let it go)
    still does."""
    put: dict[str, Any] = {
        "Item": serialize(item),
        "ConditionExpression": "attribute_not_exists(pk)" if taken_from is None else "jobId = :held",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    if taken_from is not None:
        put["ExpressionAttributeValues"] = values({":held": taken_from})
    return {"Put": put}


def _key_refused(conflict: TransactionConflict) -> bool:
    """Whether a job's own item was held by another (rather than touched by another
    transaction at the same time); any other refusal raises."""
    codes = {r["code"] for r in conflict.reasons}
    if codes - {None, "None", "ConditionalCheckFailed", "TransactionConflict"}:
        raise RuntimeError(f"job insert refused: {sorted(map(str, codes))}") from None
    return "ConditionalCheckFailed" in codes


def _holds(reservation: Reservation | None) -> frozenset[str]:
    """The holds a new job is written with: its place in its space's count, under a reservation."""
    return frozenset({Hold("space").tag}) if reservation is not None else frozenset()


def _counted(reservation: Reservation | None) -> list[dict[str, Any]]:
    """The action that takes one new job's place from the reservation, if there is one."""
    return [reservation.use(1)] if reservation is not None else []


def _sort_key(record: NewRecord) -> str:
    return ready_sort(record.place, record.job.id)


def _item(record: NewRecord, holds: AbstractSet[str] = frozenset()) -> Item:
    return job_item(
        record.job,
        record.payload.attributes | {"payloadBytes": record.payload.size},
        record.place,
        record.width,
        holds,
    )


TRANSACTION_ACTIONS = 100
TRANSACTION_BYTES = 4_000_000 - 100_000
"""DynamoDB's limits on one TransactWriteItems: 100 actions, 4 MB of items in all (less a
margin for `approximate_size`'s error)."""


def _new_items(record: NewRecord, holds: AbstractSet[str] = frozenset()) -> list[Item]:
    """What a new job is: its item, and its payload's side item if it has one."""
    return [_item(record, holds)] + ([record.payload.side_item] if record.payload.side_item else [])


def _put(item: Item) -> dict[str, Any]:
    return {"Put": {"Item": serialize(item)}}


def transaction_groups(
    jobs: list[list[Item]], *, actions: int = TRANSACTION_ACTIONS
) -> list[list[list[Item]]]:
    """New jobs (each the items that make it) in groups that fit one transaction each (of
    at most `actions` actions): a job is never split."""
    groups: list[list[list[Item]]] = []
    used = size = 0
    for items in jobs:
        weight = sum(approximate_size(item) for item in items)
        if not groups or used + len(items) > actions or size + weight > TRANSACTION_BYTES:
            groups.append([])
            used = size = 0
        groups[-1].append(items)
        used += len(items)
        size += weight
    return groups
