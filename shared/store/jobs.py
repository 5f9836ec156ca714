"""Job items: insert (with idempotency keys), read, list, claim and transition.

Every status change is one conditional UpdateItem on the job's own item, built from a
`shared.machine.Transition`; the ready index only finds candidates and never decides.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import random
import zlib
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from shared import limits
from shared.machine import (
    AT_LEAST_ONCE,
    MAX_PRIORITY,
    Hold,
    Job,
    JobStatus,
    Place,
    Take,
    Transition,
    hand_out_order,
)
from shared.machine import claim as claim_transition
from shared.store import keys
from shared.store.blobs import Blobs, Packed
from shared.store.codec import (
    GUARANTEE,
    HOLDS,
    UpdateBuilder,
    approximate_size,
    expired,
    job_from_item,
    job_item,
    purged,
    ready_sort,
    released,
    transition_update,
    ttl_seconds,
)
from shared.store.counters import Counters, Owner, release_action, slot_shares, take_action
from shared.store.deadlines import DeadlineBook
from shared.store.dynamo import ConditionFailed, Dynamo, Item, TransactionConflict, serialize, values
from shared.store.keyed import KeyEntries, KeyLook, Widths, at_rest
from shared.store.leases import LeaseBook
from shared.store.listing import Listing
from shared.store.table import READY_INDEX, TTL_ATTRIBUTE


@dataclass
class NewRecord:
    """A validated job ready to store, with its payload packed."""

    job: Job
    payload: Packed
    place: Place
    """Where it waits: due or later (`shared.machine.place`)."""
    width: int = keys.READY_SHARDS
    """The ready shards its name writes new jobs to (`shared.spread`)."""
    retry_ttl: int | None = None
    """A retry (`job.retry_of`): the TTL of the job it retries, which its retry mark keeps."""
    once: bool = False
    """Written at most once (a notification, `shared.notify`): its id is fixed by what it
    is about, and its item is put only if no item has its key; a repeat answers DUPLICATE
    with that id."""


@dataclass(frozen=True)
class RetryOf:
    """The job a new one retries (`shared.retry`), and that job's TTL in seconds (None:
    kept for good), which the retry mark keeps too."""

    job_id: str
    ttl: int | None


@dataclass(frozen=True)
class NameLimits:
    """A name's counted limits in force for a claim (from its policy)."""

    concurrency: int | None = None
    rate_tokens: int | None = None
    rate_interval_ms: int | None = None


class CounterFull(Exception):
    """A transition's hold could not be taken: its counter is at its cap."""

    def __init__(self, hold: Hold) -> None:
        super().__init__(f"{hold.tag} is full")
        self.hold = hold


class Contended(RuntimeError):
    """A transaction kept meeting others on the same items: nothing of it applied."""


@dataclass(frozen=True)
class Reservation:
    """Room a create took on its space's `maxInFlight` (`SpaceStore.reserve`) before writing
    its jobs: each job's own transaction turns one unit of it into the job's hold."""

    space: str
    attribute: str
    count: int

    def use(self, n: int) -> dict[str, Any]:
        """The transaction action that turns `n` units into holds."""
        return {
            "Update": {
                "Key": serialize(keys.inflight(self.space)),
                "UpdateExpression": "ADD #r :minus",
                "ConditionExpression": "#r >= :n",
                "ExpressionAttributeNames": {"#r": self.attribute},
                "ExpressionAttributeValues": values({":minus": -n, ":n": n}),
            }
        }


@dataclass
class Inserted:
    id: str
    new: bool


@dataclass
class KeyHold:
    """An idempotency key's item and the item of the job it names (None: removed)."""

    key: Item
    job: Item | None


@dataclass
class Claimed:
    item: Item
    raw: bytes | None
    """The payload's stored JSON, left for the caller to parse (and survive) job by job."""


@dataclass
class Census:
    """Pending jobs of one name, by where they stand (`JobStore.census`)."""

    pending: int = 0
    claimable: int = 0
    first_time: int = 0
    """Not claimable yet, never handed out (a delay)."""
    retrying: int = 0
    """Not claimable yet, waiting before a retry."""
    oldest_claimable_at_ms: int | None = None
    capped: bool = False

    def count(self, row: Item, now_ms: int) -> None:
        ready = int(row.get("readyAtMs") or 0)
        self.pending += 1
        if keys.is_due(row["gsk"]) or ready <= now_ms:
            self.claimable += 1
            oldest = self.oldest_claimable_at_ms
            self.oldest_claimable_at_ms = ready if oldest is None else min(oldest, ready)
        elif row.get("attempt", 0) == 0:
            self.first_time += 1
        else:
            self.retrying += 1


class JobStore:
    def __init__(
        self,
        db: Dynamo,
        blob_store: Blobs,
        leases: LeaseBook,
        widths: Widths = at_rest,
        deadlines: DeadlineBook | None = None,
    ) -> None:
        """`widths`: each name's width now (`shared.spread`, through the policies' cache), where
        keys' entries are listed and moved so they spread with their name."""
        self.db = db
        self.blobs = blob_store
        self.leases = leases
        self.deadlines = deadlines or DeadlineBook(db)
        self._rng = random.Random()
        self._contention = _Contention()
        self.counters = Counters(db)
        self.widths = widths
        self.key_entries = KeyEntries(db, self.counters, widths)
        self.listing = Listing(db)

    # -- create ---------------------------------------------------------------

    def insert(
        self,
        space: str,
        records: list[NewRecord],
        *,
        key_released: Callable[[KeyHold], bool],
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
        holds = frozenset({Hold("space").tag}) if reservation is not None else frozenset()
        plain = [r for r in records if r.job.key is None and r.job.retry_of is None and not r.once]
        if reservation is None:
            self.db.batch_put([_item(r) for r in plain if r.payload.side_item is None])
            with_side = [_new_items(r) for r in plain if r.payload.side_item is not None]
            for group in transaction_groups(with_side):
                self._transact_new([_put(item) for items in group for item in items])
        else:
            every = [_new_items(r, holds) for r in plain]
            for group in transaction_groups(every, actions=TRANSACTION_ACTIONS - 1):
                self._transact_new(
                    [_put(item) for items in group for item in items] + [reservation.use(len(group))]
                )
        return [
            self._insert_keyed(space, r, key_released, reservation)
            if r.job.key is not None or r.job.retry_of is not None
            else self._insert_once(r, reservation)
            if r.once
            else Inserted(r.job.id, True)
            for r in records
        ]

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
        holds = frozenset({Hold("space").tag}) if reservation is not None else frozenset()
        job, *side = _new_items(record, holds)
        counted = [reservation.use(1)] if reservation is not None else []
        actions = [
            {"Put": {"Item": serialize(job), "ConditionExpression": condition}},
            *map(_put, side),
            *counted,
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
        key_released: Callable[[KeyHold], bool],
        reservation: Reservation | None,
    ) -> Inserted:
        """Write a job that holds an item of its own: its idempotency key, or the retry
        mark of the job it retries. Lost to an earlier holder: that holder's job."""
        job = record.job
        holds = frozenset({Hold("space").tag}) if reservation is not None else frozenset()
        counted = [reservation.use(1)] if reservation is not None else []
        released: Callable[[Item], bool]
        if job.key is not None:
            key = keys.idempotency_key(space, job.key)
            marked: Item = {}

            def released(holder: Item) -> bool:
                return key_released(KeyHold(holder, self.db.get(keys.job(space, holder["jobId"]))))

        else:
            assert job.retry_of is not None
            key = keys.retry_marker(space, job.retry_of)
            marked = {TTL_ATTRIBUTE: record.retry_ttl} if record.retry_ttl is not None else {}

            def released(holder: Item) -> bool:
                return False

        taken_from: str | None = None
        for _ in range(8):
            # Take a free key, or, once its holder has let it go, take it from that holder
            # only: of two creates racing for a released key, one wins and one sees it.
            put_key: dict[str, Any] = {
                "Item": serialize(key | {"jobId": job.id} | marked),
                "ConditionExpression": "attribute_not_exists(pk)" if taken_from is None else "jobId = :held",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
            if taken_from is not None:
                put_key["ExpressionAttributeValues"] = values({":held": taken_from})
            try:
                self.db.transact([{"Put": put_key}, *map(_put, _new_items(record, holds)), *counted])
                return Inserted(job.id, True)
            except TransactionConflict as conflict:
                codes = {r["code"] for r in conflict.reasons}
                if codes - {None, "None", "ConditionalCheckFailed", "TransactionConflict"}:
                    raise RuntimeError(f"job insert refused: {sorted(map(str, codes))}") from None
                if "ConditionalCheckFailed" not in codes:
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

    # -- read -----------------------------------------------------------------

    def retries(self, space: str, job_ids: list[str]) -> dict[str, str]:
        """The jobs already made by retrying each of `job_ids` (old id -> new id), from
        their retry marks."""
        rows = self.db.batch_get([keys.retry_marker(space, i) for i in dict.fromkeys(job_ids)])
        return {row["pk"].rsplit("#", 1)[1]: row["jobId"] for row in rows}

    def key_holder(self, space: str, key: str) -> KeyHold | None:
        """Who holds `key`, if anyone (released or not: the caller decides)."""
        held = self.db.get(keys.idempotency_key(space, key))
        return KeyHold(held, self.db.get(keys.job(space, held["jobId"]))) if held else None

    def items(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Item]:
        rows = self.db.batch_get([keys.job(space, i) for i in dict.fromkeys(job_ids)], consistent=consistent)
        return {row["sk"]: row for row in rows}

    def unclaimed(
        self,
        space: str,
        name: str,
        ready_by_ms: int,
        aging_ms: int,
        limit: int,
        *,
        reach: int = keys.READY_SHARDS,
    ) -> list[Item]:
        """Pending jobs of `name` claimable since `ready_by_ms` or earlier, up to `limit`.

        Later jobs are read by their ready time: every entry up to the bound qualifies.
        Due jobs are kept by order of hand-out, and a job ready by `ready_by_ms` has an
        order of at most that of a job of the lowest priority ready then (under the name's
        aging interval `aging_ms`): the lane is read up to there, and the filter keeps those
        ready in time. So a look reads, besides what it finds, the due jobs that became
        claimable up to 1,000 aging intervals after the bound (about 17 hours at the
        default minute); under strict priority, the whole due lane. A job placed under a
        longer interval than today's, with a negative priority, can lie past the bound.

        A key listed in these lanes has room: its own lane is read the same way (a key at
        its limit is not listed, and its jobs wait on it, not for a worker)."""
        found: list[Item] = []
        lowest = hand_out_order(ready_at_ms=ready_by_ms, priority=-MAX_PRIORITY, aging_ms=aging_ms)
        lanes = (
            (keys.LATER, keys.later_bound(ready_by_ms), None),
            (keys.DUE, keys.due_bound(lowest), "readyAtMs <= :by"),
        )
        partitions = keys.ready_partitions(space, name, reach)
        while partitions and len(found) < limit:
            partition = partitions.pop(0)
            for first, last, filter_expression in lanes:
                start = None
                while len(found) < limit:
                    rows, start = self.db.query(
                        "gpk = :p AND gsk BETWEEN :lo AND :hi",
                        vals={":p": partition, ":lo": first, ":hi": last}
                        | ({":by": ready_by_ms} if filter_expression else {}),
                        index=READY_INDEX,
                        limit=limit - len(found),
                        start=start,
                        filter_expression=filter_expression,
                    )
                    found += [r for r in rows if not keys.is_key_entry(r)]
                    partitions += [
                        keys.key_lane(space, name, str(r["concurrencyKey"]))
                        for r in rows
                        if keys.is_key_entry(r) and r.get("concurrencyKey") is not None
                    ]
                    if start is None:
                        break
        return found[:limit]

    def census(
        self, space: str, name: str, now_ms: int, cap: int, *, reach: int = keys.READY_SHARDS
    ) -> Census:
        """Count the pending jobs of `name` from its ready shards in `reach`, and the lanes of
        the keys listed there (a key at its limit is not listed: its jobs are not counted),
        up to `cap` entries.

        Reads every entry it counts (a count query is billed the same), in pages of up to
        1 MB of the index: some 250 bytes an entry, so 10,000 entries cost about 300 read
        units. The index is eventually consistent: counts may lag writes by a second."""
        census = Census()
        lanes = keys.ready_partitions(space, name, reach)
        while lanes and census.pending < cap:
            partition = lanes.pop(0)
            start = None
            while census.pending < cap:
                rows, start = self.db.query(
                    "gpk = :p",
                    vals={":p": partition},
                    index=READY_INDEX,
                    limit=cap - census.pending,
                    start=start,
                )
                for row in rows:
                    if not keys.is_key_entry(row):
                        census.count(row, now_ms)
                    elif row.get("concurrencyKey") is not None:
                        # A listed key's jobs wait in its own lane: counted from there.
                        lanes.append(keys.key_lane(space, name, str(row["concurrencyKey"])))
                if start is None:
                    break
        census.capped = census.pending >= cap
        return census

    def forget(self, space: str, job_id: str, item: Item) -> None:
        """Delete what belonged to a job that retention removed: its lines, events and stored
        values. Its idempotency key stays held for the key window after the job finished
        (retention may be shorter): the key item keeps the finish time, and its own TTL
        removes it once no key window can reach (unless another job holds it now).

        What the job never had is not looked for: its counts say whether it had lines or
        events (each count is raised by the write that precedes what it counts), so most
        jobs cost no query here."""
        had = [
            pk
            for pk, count in (
                (keys.lines(space, job_id), "lineCount"),
                (keys.events(space, job_id), "eventCount"),
            )
            if int(item.get(count) or 0) > 0
        ]
        for pk in had:
            start = None
            while True:
                rows, start = self.db.query("pk = :pk", vals={":pk": pk}, start=start, consistent=True)
                self.db.batch_delete({"pk": r["pk"], "sk": r["sk"]} for r in rows)
                if start is None:
                    break
        self.blobs.delete(space, job_id, item)
        if item.get("key") is not None:
            finished = int(item.get("finishedAtMs") or 0)
            with contextlib.suppress(ConditionFailed):
                self.db.update(
                    keys.idempotency_key(space, item["key"]),
                    "SET finishedAtMs = :finished, #ttl = :ttl",
                    condition="jobId = :id",
                    names={"#ttl": TTL_ATTRIBUTE},
                    vals={
                        ":id": job_id,
                        ":finished": finished,
                        ":ttl": ttl_seconds(finished + limits.MAX_KEY_WINDOW_MS),
                    },
                )

    def get_item(self, space: str, job_id: str) -> Item | None:
        return self.db.get(keys.job(space, job_id))

    def load(self, space: str, item: Item, *, bodies: bool = True) -> Job:
        """The domain job of an item, with payload, result and error read from wherever they live."""
        if not bodies:
            return job_from_item(space, item)
        payload, result, error = self.blobs.read_many(
            space, [(item, "payload"), (item, "result"), (item, "error")]
        )
        return job_from_item(
            space,
            item,
            payload=_json(payload),
            result=_json(result),
            error=error.decode() if error is not None else None,
        )

    def page(
        self,
        space: str,
        *,
        before: str | None,
        limit: int,
        status: JobStatus | None,
        name: str | None,
        now_ms: int,
    ) -> list[Item]:
        """Newest first across the space's jobs, up to `limit`, ids below `before`: the items
        themselves, read from the space's job partitions and merged (`shared.store.listing`);
        one past its retention and not removed yet is left out."""
        found: list[Item] = []
        items = self.listing.newest(
            space, before=before, want=limit, name=name, status=status.value if status else None
        )
        for item in items:
            if purged(item, now_ms):
                continue
            found.append(item)
            if len(found) == limit:
                break
        return found

    # -- claim ----------------------------------------------------------------

    def claim(
        self,
        space: str,
        names: Mapping[str, int],
        *,
        count: int,
        now_ms: int,
        lease_ms: int | None,
        payload_budget: int,
        reach: Mapping[str, int] | None = None,
        limits: Mapping[str, NameLimits] | None = None,
        per_key: Mapping[str, int | None] | None = None,
        per_key_rate: Mapping[str, tuple[int, int]] | None = None,
        on_expired: Callable[[Item], None] | None = None,
    ) -> list[Claimed]:
        """Hand out up to `count` jobs of `names` (each with its aging interval in force), in
        order of hand-out, each by a conditional write that only one claim can win.

        A name at rest has its 4 ready shards read, all of them, so the order is exact. A
        name spread wider (`reach`, from `shared.spread`) has a random few read, and more
        only when those give too few: claims at once read different shards rather than
        race for one head. A candidate lost to another claim leaves the rest of its shard
        to that claim (this one goes on in other shards), and a claim that lost every
        candidate it tried looks again before it answers none.

        Claims racing each other are seen by their lost writes, and this process answers
        the next ones by spreading them (`_Contention`): each reads a window `k` times the
        count and tries one of `k` interleaved slices of it, chosen at random (another on a
        loss), so claims at once try different jobs. Without races `k` is 1: the order is
        exact at rest; with them, a job is handed out from among the first `k` x count.

        A name with `limits` gets no more than its room (`_fill_room`, reckoned once a claim
        for the names its first look finds), each of its jobs taking a slot of its
        `concurrency` in the job's own write. Keys' entries among the candidates are read
        for their head jobs (`_expand_keys`; `per_key`: each name's `perKeyConcurrency`),
        each of which takes a slot of its key in its own write.

        A candidate past its deadline is never handed out (the claim's own write refuses
        it); `on_expired` is given its item as the refusal found it (to cancel it), and the
        claim goes on down the same lane: no other claim took it."""
        contention = self._contention
        spread = contention.spread(space, names)
        new_look = functools.partial(
            _Look, self.db, space, names, reach=reach or {}, now_ms=now_ms, count=count, rng=self._rng
        )
        look = new_look(spread=spread)
        won: list[Item] = []
        budget = payload_budget
        room = _Room()
        lost_any = False
        looks_again = CLAIM_LOOKS_AGAIN
        while len(won) < count:
            shards = look.shards()
            if not shards:
                if won or not lost_any or not looks_again:
                    break
                looks_again -= 1
                # Every candidate this claim tried was taken: claimable work may still
                # wait behind them. Read every shard again, once more, before answering none.
                contention.lost(space, names)
                spread = contention.spread(space, names)
                look = new_look(spread=spread)
                lost_any = False
                continue
            rows = _interleaved(look.read(shards), spread, self._rng)
            rows, keyed = self._expand_keys(
                space,
                rows,
                names=names,
                now_ms=now_ms,
                count=count - len(won),
                per_key=per_key or {},
                per_key_rate=per_key_rate or {},
            )
            taken, lost, budget = self._take(
                space,
                rows,
                count=count - len(won),
                budget=budget,
                now_ms=now_ms,
                lease_ms=lease_ms,
                have_some=bool(won),
                room=room,
                limits=limits or {},
                keyed=keyed,
                on_expired=on_expired,
            )
            self._settle_keys(space, keyed, now_ms)
            won += taken
            lost_any = lost_any or lost
        if lost_any:
            contention.lost(space, names)
        else:
            contention.clean(space, names)
        bodies = self.blobs.read_many(space, [(item, "payload") for item in won])
        return [Claimed(item, body) for item, body in zip(won, bodies, strict=True)]

    def _take(
        self,
        space: str,
        rows: list[tuple[Item, str]],
        *,
        count: int,
        budget: int,
        now_ms: int,
        lease_ms: int | None,
        have_some: bool,
        room: _Room,
        limits: Mapping[str, NameLimits],
        keyed: Mapping[tuple[str, str], KeyLook],
        on_expired: Callable[[Item], None] | None = None,
    ) -> tuple[list[Item], bool, int]:
        """Claim up to `count` of `rows` (in their order): what it won, whether it lost any
        to another claim, and the payload budget left. `room` says how many more of each
        limited name this claim may hand out (filled in here for names met first), `keyed`
        how many of each key's head jobs it read."""
        self._fill_room(space, room, [row for row, _ in rows], limits=limits, count=count, now_ms=now_ms)
        chosen: list[tuple[Item, Transition, str]] = []
        for row, lane in rows:
            if len(chosen) >= count + CLAIM_SPARE:
                break
            if room.get(_name_of(space, row), 1) <= 0:
                continue
            size = row.get("payloadBytes", 0)
            if size > budget and (chosen or have_some):
                continue
            budget -= size
            lease = lease_ms if lease_ms is not None else row["timeoutMs"]
            chosen.append(
                (row, claim_transition(attempt_before=row["attempt"], now_ms=now_ms, lease_ms=lease), lane)
            )
        if not chosen:
            return [], False, budget
        # Write-ahead: the lease book learns of these claims before they happen, so a crash
        # between the claims and the answer can never strand a running job.
        self.leases.record(
            space, [(row["sk"], t.changes["attempt"], t.changes["lease_until_ms"]) for row, t, _ in chosen]
        )
        return self._claim_chosen(
            space,
            chosen,
            count=count,
            room=room,
            keyed=keyed,
            budget=budget,
            now_ms=now_ms,
            on_expired=on_expired,
        )

    def _claim_chosen(
        self,
        space: str,
        chosen: list[tuple[Item, Transition, str]],
        *,
        count: int,
        room: _Room,
        keyed: Mapping[tuple[str, str], KeyLook],
        budget: int,
        now_ms: int,
        on_expired: Callable[[Item], None] | None = None,
    ) -> tuple[list[Item], bool, int]:
        """Claim the chosen candidates in order until `count` are won, within each limited
        name's room and each key's; a keyed job takes a slot of its key in its own write.
        What it won, whether it lost any race, and the payload budget left."""
        won: list[Item] = []
        contended: set[str] = set()
        lost = False
        for row, transition, lane in chosen:
            if len(won) >= count:
                break
            name = _name_of(space, row)
            key = _key_of(row, space)
            look = keyed.get(key) if key is not None else None
            full = (name in room and room[name] <= 0) or (look is not None and look.won >= look.room)
            if lane in contended or full:
                budget += row.get("payloadBytes", 0)
                continue
            try:
                item = self._claim_one(
                    space,
                    name,
                    row,
                    _key_take(transition, row, look),
                    free=room.slots.get(name),
                    shares=room.shares.get(name),
                    extra=_homeward(row),
                )
            except ConditionFailed as failed:
                budget += row.get("payloadBytes", 0)
                if failed.item is not None and expired(failed.item, now_ms):
                    # Past its deadline, not taken: the lane is still this claim's to go on in.
                    if on_expired is not None:
                        on_expired(failed.item)
                    continue
                # Another claim won it, or it changed since the index saw it: that claim is
                # likely working down this lane (a shard, a slice, a key), so leave it the lane.
                contended.add(lane)
                lost = True
                continue
            except Contended:
                # Another claim won it, or it changed since the index saw it: that claim is
                # likely working down this lane (a shard, a slice, a key), so leave it the lane.
                contended.add(lane)
                lost = True
                budget += row.get("payloadBytes", 0)
                continue
            except CounterFull:
                assert look is not None
                look.room = look.won  # the key filled up since its item was read
                budget += row.get("payloadBytes", 0)
                continue
            if item is None:
                room[name] = 0  # every slot of the name is taken
                budget += row.get("payloadBytes", 0)
                continue
            won.append(item)
            if name in room:
                room[name] -= 1
            if look is not None:
                look.won += 1
        return won, lost, budget

    def _claim_one(
        self,
        space: str,
        name: str,
        row: Item,
        transition: Transition,
        *,
        free: list[int] | None,
        shares: list[int] | None,
        extra: Callable[[UpdateBuilder], None] | None = None,
    ) -> Item | None:
        """Claim one job; for a name with a `concurrency`, on a slot shard with room (another
        when the one tried has filled since it was read). None: no shard has room."""
        owner = Owner(name, row.get("concurrencyKey"))
        if free is None or shares is None:
            return self.apply(space, row["sk"], transition, owner=owner, extra=extra)
        while any(free):
            shard = random.choice([n for n, left in enumerate(free) if left > 0])
            take = Take(Hold("name", shard), shares[shard])
            try:
                item = self.apply(
                    space,
                    row["sk"],
                    _with_takes(transition, *transition.takes, take),
                    owner=owner,
                    extra=extra,
                )
            except CounterFull as full:
                if full.hold.kind != "name":
                    raise
                free[shard] = 0
                continue
            free[shard] -= 1
            return item
        return None

    def _expand_keys(
        self,
        space: str,
        rows: list[tuple[Item, str]],
        *,
        names: Mapping[str, int],
        now_ms: int,
        count: int,
        per_key: Mapping[str, int | None],
        per_key_rate: Mapping[str, tuple[int, int]],
    ) -> tuple[list[tuple[Item, str]], dict[tuple[str, str], KeyLook]]:
        """Candidates with each key entry near the head replaced by its key's head jobs, as many
        as the key has room for (its item read strongly consistent, its lane from the head),
        in order of hand-out among the rest (each key a lane of its own for `_claim_chosen`).
        A full key's entry is taken out of the lanes and its lane not read: a full key's
        backlog costs a claim nothing. A key under a `perKeyRate` (`per_key_rate`: tokens,
        interval) gets no more than its rate allows now, taken here; a key whose rate is used
        up waits in the later lane until it allows one."""
        # An entry just moved to another shard may show in both for a moment (the index is
        # eventually consistent): one look a key.
        near: dict[str, Item] = {}
        for row, _ in rows[: count + CLAIM_SPARE]:
            if keys.is_key_entry(row):
                near.setdefault(row["pk"], row)
        entries = list(near.values())
        jobs = [(r, lane) for r, lane in rows if not keys.is_key_entry(r)]
        if not entries:
            return jobs, {}
        items = self.key_entries.read(space, entries)
        looks: dict[tuple[str, str], KeyLook] = {}
        found: list[tuple[int, str, Item, str]] = []
        for entry in entries:
            item = items.get(entry["pk"])
            if item is None or "concurrencyKey" not in item:
                continue
            name = keys.ready_name(space, entry["gpk"])
            look = KeyLook(name, str(item["concurrencyKey"]), per_key.get(name), item)
            if look.cap is not None and look.held >= look.cap:
                self.key_entries.delist(space, name, look.key, look.cap)
                continue
            look.room = count if look.cap is None else min(count, look.cap - look.held)
            # Read a little past the room: the index may still show jobs just claimed.
            look.read_limit = look.room + 2
            self.key_entries.lane(look, space, now_ms, look.read_limit)
            rate = per_key_rate.get(name)
            if rate is not None and look.rows:
                allowed = self.key_entries.take_rate(
                    look, space, rate, min(look.room, len(look.rows)), now_ms
                )
                if not allowed:
                    continue
                look.room = allowed
            aging_ms = names.get(name, 0)
            for row in look.rows:
                row["name"] = name
                found.append((_order(row, aging_ms), row["sk"], row, f"key {name}#{look.key}"))
            looks[(name, look.key)] = look
        found += [(_order(r, names.get(_name_of(space, r), 0)), r["sk"], r, lane) for r, lane in jobs]
        found.sort(key=lambda f: (f[0], f[1]))
        return [(row, lane) for _, _, row, lane in found], looks

    def _settle_keys(self, space: str, looks: Mapping[tuple[str, str], KeyLook], now_ms: int) -> None:
        """Move each key's entry read by this claim to its next head, or out of the lanes
        (`KeyEntries.settle`)."""
        for look in looks.values():
            self.key_entries.settle(space, look, now_ms)

    def _fill_room(
        self,
        space: str,
        room: _Room,
        rows: list[Item],
        *,
        limits: Mapping[str, NameLimits],
        count: int,
        now_ms: int,
    ) -> None:
        """How many jobs of each limited name (with candidates, not yet in `room`) this claim
        may hand out: the free slots of its `concurrency` (read, strongly consistent), and
        what its `rate` allows now (taken here, before the claims: a hand-out the claim then
        loses is not given back, so the rate is never passed, only sometimes under-used)."""
        wanted: dict[str, int] = {}
        for row in rows:
            name = _name_of(space, row)
            wanted[name] = wanted.get(name, 0) + 1
        for name, found in wanted.items():
            limit = limits.get(name)
            if limit is None or name in room:
                continue
            allowed = min(count, found)
            if limit.concurrency is not None:
                shares = slot_shares(limit.concurrency)
                held = self.counters.running(space, name, len(shares))
                free = [max(0, share - n) for share, n in zip(shares, held, strict=True)]
                room.shares[name], room.slots[name] = shares, free
                allowed = min(allowed, sum(free))
            if allowed > 0 and limit.rate_tokens is not None and limit.rate_interval_ms is not None:
                allowed = self.counters.take_rate(
                    space,
                    name,
                    tokens=limit.rate_tokens,
                    interval_ms=limit.rate_interval_ms,
                    want=allowed,
                    now_ms=now_ms,
                )
            room[name] = allowed

    # -- transitions ----------------------------------------------------------

    def apply(
        self,
        space: str,
        job_id: str,
        transition: Transition,
        *,
        extra: Callable[[UpdateBuilder], None] | None = None,
        stored: dict[str, Any] | None = None,
        held: Item | None = None,
        owner: Owner | None = None,
    ) -> Item:
        """Apply one transition as a conditional write; answers the item after it.

        `stored` are packed value attributes (a result, an error) set beside the change;
        `extra` adds report parts (progress, counters) and conditions to the same write.
        `held` is the job's item as the caller read it (for the holds it has and whose
        counters they are), `owner` whose counters they are where the caller knows it.
        Raises ConditionFailed, carrying the item as it stood, when the guard does not
        hold; CounterFull when a hold the transition takes is at its cap.

        A transition of a job holding nothing it lets go (the usual case: no limits) is one
        plain UpdateItem, which requires the job to hold nothing; refused for holding
        something, it is made again as one transaction with the counters, as a finishing
        write that did not know the job has a callback is made again with its mark.
        """
        callback = transition.has_callback
        holds = frozenset((held or {}).get(HOLDS) or ())
        owner = owner or Owner.of(held or {})
        for _ in range(4):
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
                    raise
        raise ConditionFailed(None)

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


class _Room(dict[str, int]):
    """Per limited name: how many more jobs a claim may hand out; and, for a name with a
    `concurrency`, its shards' shares and the free slots read on each."""

    def __init__(self) -> None:
        super().__init__()
        self.shares: dict[str, list[int]] = {}
        self.slots: dict[str, list[int]] = {}


def _name_of(space: str, row: Item) -> str:
    return str(row["name"]) if "name" in row else keys.ready_name(space, row["gpk"])


def _key_of(row: Item, space: str) -> tuple[str, str] | None:
    """The (name, concurrency key) of a keyed candidate; None for a job without a key."""
    key = row.get("concurrencyKey")
    return None if key is None else (_name_of(space, row), str(key))


def _order(row: Item, aging_ms: int) -> int:
    """A candidate's order of hand-out: a due job's from its sort key, a later job's from its
    ready time and priority under the aging interval in force now."""
    if keys.is_due(row["gsk"]):
        return keys.due_order(row["gsk"])
    return hand_out_order(ready_at_ms=row["readyAtMs"], priority=row.get("priority", 0), aging_ms=aging_ms)


def _sort_key(record: NewRecord) -> str:
    return ready_sort(record.place, record.job.id)


def _key_take(transition: Transition, row: Item, look: KeyLook | None) -> Transition:
    """A claim of a keyed job takes a slot of its key (under `perKeyConcurrency`, or none)."""
    if look is None:
        return transition
    look.tried.add(row["sk"])
    return _with_takes(transition, Take(Hold("key"), look.cap))


def _with_takes(transition: Transition, *takes: Take) -> Transition:
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


def _item(record: NewRecord, holds: AbstractSet[str] = frozenset()) -> Item:
    return job_item(
        record.job,
        record.payload.attributes | {"payloadBytes": record.payload.size},
        record.place,
        record.width,
        holds,
    )


CLAIM_LOOKS_AGAIN = 3
"""Times a claim that lost every candidate it tried reads its shards again before it
answers none."""
CLAIM_SPARE = 8
"""Candidates a claim reads and may try past its count: some are taken by other claims."""
FEW_SHARDS = 4
"""Shards a claim reads at a time from a name spread wider than at rest (no more than
the count it asks for: a claim of one reads one, then another if that one was empty)."""


class _Look:
    """One claim's reading of the ready shards of its names: which to read next, and
    their candidates merged in order of hand-out."""

    def __init__(
        self,
        db: Dynamo,
        space: str,
        names: Mapping[str, int],
        *,
        reach: Mapping[str, int],
        now_ms: int,
        count: int,
        spread: int,
        rng: random.Random,
    ) -> None:
        self.db = db
        self.names = names
        self.now_ms = now_ms
        self.limit = min(count + CLAIM_SPARE, 1000)
        self.few = min(FEW_SHARDS, count)
        self.unread: dict[str, list[str]] = {}
        self.limits: dict[str, int] = {}
        for name in names:
            shards = keys.ready_partitions(space, name, reach.get(name, keys.READY_SHARDS))
            rng.shuffle(shards)
            self.unread[name] = shards
            # At rest, each shard is read as deep as the whole count: the order is exact.
            # Spread wider or racing, the shards read share the window (count x spread);
            # more are read if they fall short.
            wide = len(shards) > keys.READY_SHARDS or spread > 1
            window = min(count * spread + CLAIM_SPARE, 1000)
            self.limits[name] = -(-window // self.few) + 2 if wide else self.limit

    def shards(self) -> list[tuple[str, str]]:
        """The (name, shard) pairs to read next: every shard of a name at rest, a few of a
        name spread wider; none once all are read."""
        out: list[tuple[str, str]] = []
        for name, unread in self.unread.items():
            take = len(unread) if len(unread) <= keys.READY_SHARDS else self.few
            out += [(name, shard) for shard in unread[:take]]
            del unread[:take]
        return out

    def read(self, shards: list[tuple[str, str]]) -> list[Item]:
        """The candidates of `shards`, merged in order of hand-out.

        Each shard is read once up to the later jobs ready by now: the due lane comes
        first, in order, then those later jobs, placed among the due ones by the order
        their priority and ready time give them now. Only a full page of due jobs leaves
        the later lane to a query of its own."""
        found: list[tuple[int, str, Item]] = []
        now_ms = self.now_ms
        for name, partition in shards:
            aging_ms, limit = self.names[name], self.limits[name]
            rows, _ = self.db.query(
                "gpk = :p AND gsk <= :hi",
                vals={":p": partition, ":hi": keys.later_bound(now_ms)},
                index=READY_INDEX,
                limit=limit,
            )
            due = [r for r in rows if keys.is_due(r["gsk"])]
            later = [r for r in rows if r["gsk"].startswith(keys.LATER)]
            if len(due) == limit:
                later, _ = self.db.query(
                    "gpk = :p AND gsk BETWEEN :lo AND :hi",
                    vals={":p": partition, ":lo": keys.LATER, ":hi": keys.later_bound(now_ms)},
                    index=READY_INDEX,
                    limit=limit,
                )
            found += [(keys.due_order(r["gsk"]), r["sk"], r) for r in due]
            found += [
                (
                    hand_out_order(
                        ready_at_ms=r["readyAtMs"], priority=r.get("priority", 0), aging_ms=aging_ms
                    ),
                    r["sk"],
                    r,
                )
                for r in later
            ]
        found.sort(key=lambda f: (f[0], f[1]))
        return [row for _, _, row in found]


def _homeward(row: Item) -> Callable[[UpdateBuilder], None] | None:
    """For a job claimed from past its rest shard: its claim moves it to that shard (it is
    leaving the index, so the move costs nothing), so that if it ever waits again it waits
    where every reach looks, and the shards past the rest can empty for good."""
    if row.get("concurrencyKey") is not None:
        return None  # a keyed job waits in its key's lane, never a name's shard
    home = keys.rest_shard(row["gpk"])
    if home == row["gpk"]:
        return None
    return lambda update: update.set("gpk", home)


def _interleaved(rows: list[Item], spread: int, rng: random.Random) -> list[tuple[Item, str]]:
    """Candidates in the order one claim tries them, each with its lane (what a lost race
    makes the claim leave): in order, by shard, for a claim alone. Racing (`spread` > 1),
    the window in `spread` slices by a hash of the job's id (so every claim slices it
    alike, whatever it read), one slice after another from a random one, each in order."""
    if spread <= 1:
        return [(row, row["gpk"]) for row in rows]
    slices: dict[int, list[Item]] = {}
    for row in rows:
        slices.setdefault(zlib.crc32(f"{row['sk']}#slice".encode()) % spread, []).append(row)
    picked = list(slices)
    rng.shuffle(picked)
    return [(row, f"slice {j}") for j in picked for row in slices[j]]


class _Contention:
    """What this process has seen of claims racing for one name: a spread of 2**level
    (1 to `MAX_SPREAD`), raised by a claim that lost a race, lowered by claims that did not."""

    def __init__(self) -> None:
        self.levels: dict[tuple[str, str], tuple[int, int]] = {}
        """(space, name) -> (level, clean claims since it last changed)."""

    def spread(self, space: str, names: Mapping[str, int]) -> int:
        level = max((self.levels.get((space, n), (0, 0))[0] for n in names), default=0)
        return int(2**level)

    def lost(self, space: str, names: Mapping[str, int]) -> None:
        for name in names:
            level, _ = self.levels.get((space, name), (0, 0))
            self.levels[space, name] = (min(level + 1, MAX_SPREAD_LEVEL), 0)

    def clean(self, space: str, names: Mapping[str, int]) -> None:
        for name in names:
            level, clean = self.levels.get((space, name), (0, 0))
            if not level:
                continue
            clean += 1
            self.levels[space, name] = (level - 1, 0) if clean >= CLEAN_TO_LOWER else (level, clean)


MAX_SPREAD_LEVEL = 4
"""Racing claims spread over at most 16 x their count."""
CLEAN_TO_LOWER = 4
"""Claims without a lost race before the spread halves."""


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


def _json(raw: bytes | None) -> Any:
    return None if raw is None else json.loads(raw)
