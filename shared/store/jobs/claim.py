"""The claim: candidates read from the ready shards (`shared.store.jobs.looks`), within each
limited name's and key's room (`shared.store.jobs.room`), each handed out by its own
conditional write (`Transitions.apply`), which only one claim can win."""

from __future__ import annotations

import enum
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from shared.job import Job
from shared.machine import Hold, Take, Transition
from shared.machine import claim as claim_transition
from shared.store import keys
from shared.store.codec import UpdateBuilder, expired, job_from_item
from shared.store.counters import Owner
from shared.store.dynamo import ConditionFailed, Item
from shared.store.jobs.apply import Transitions, with_takes
from shared.store.jobs.looks import CLAIM_LOOKS_AGAIN, CLAIM_SPARE, Look, interleaved, key_of, name_of
from shared.store.jobs.records import ClaimPlan, ClaimResult, Contended, CounterFull, NameClaim
from shared.store.jobs.room import Candidates, Room, Rooms
from shared.store.keyed import KeyLook

Chosen = list[tuple[Item, Transition, str]]
"""Candidates a claim will try, each with its claim's transition and its lane."""


@dataclass
class _Claim:
    """One claim's terms, and what it has won so far."""

    space: str
    names: Mapping[str, NameClaim]
    count: int
    now_ms: int
    lease_ms: int | None
    budget: int
    """The payload bytes it may still hand out (the first job is handed out whatever its size)."""
    room: Room = field(default_factory=Room)
    won: list[Item] = field(default_factory=list)
    expired: dict[str, Job] = field(default_factory=dict)
    """Candidates found past their deadline, by id: not tried again by this claim."""
    lost: bool = False
    """Whether it lost a candidate to another claim (since it last looked again)."""

    @property
    def left(self) -> int:
        return self.count - len(self.won)


class _Missed(enum.Enum):
    """A candidate not won: LOST to another claim (its lane is left to it), or SKIPPED."""

    LOST = "lost"
    SKIPPED = "skipped"


class Claims(Rooms, Transitions):
    def claim(self, space: str, plan: ClaimPlan, *, now_ms: int) -> ClaimResult:
        """Hand out up to `plan.count` jobs of its names (each with its aging interval in
        force), in order of hand-out, each by a conditional write that only one claim can
        win; the jobs won, with their payloads, and what the claim found past its deadline.

        A name at rest has its 4 ready shards read, all of them, so the order is exact. A
        name spread wider (its `reach`, from `shared.spread`) has a random few read, and more
        only when those give too few: claims at once read different shards rather than
        race for one head. A candidate lost to another claim leaves the rest of its shard
        to that claim (this one goes on in other shards), and a claim that lost every
        candidate it tried looks again before it answers none.

        Claims racing each other are seen by their lost writes, and this process answers
        the next ones by spreading them (`Contention`): each reads a window `k` times the
        count and tries one of `k` interleaved slices of it, chosen at random (another on a
        loss), so claims at once try different jobs. Without races `k` is 1: the order is
        exact at rest; with them, a job is handed out from among the first `k` x count.

        A limited name (a `concurrency` or a `rate`) gets no more than its room
        (`_fill_room`, reckoned once a claim for the names its first look finds), each of
        its jobs taking a slot of its `concurrency` in the job's own write. Keys' entries
        among the candidates are read for their head jobs (`_expand_keys`, under each
        name's `per_key_concurrency` and `per_key_rate`), each of which takes a slot of its
        key in its own write.

        A candidate past its deadline is never handed out (the claim's own write refuses
        it): it is answered in `expired` as the refusal found it, for the caller to cancel,
        and the claim goes on down the same lane (no other claim took it). A job won whose
        stored payload cannot be parsed is answered in `unreadable`, for the caller to fail:
        no claim could ever show it."""
        run = _Claim(space, plan.names, plan.count, now_ms, plan.lease_ms, plan.payload_budget)
        self._claim_looks(run)
        if run.lost:
            self._contention.lost(space, plan.names)
        else:
            self._contention.clean(space, plan.names)
        bodies = self.blobs.read_many(space, [(item, "payload") for item in run.won])
        claimed, unreadable = _with_payloads(space, run.won, bodies)
        return ClaimResult(claimed, list(run.expired.values()), unreadable)

    def _claim_looks(self, run: _Claim) -> None:
        """Read and claim shard by shard until the claim has its count or every shard is read;
        having lost every candidate it tried, read them all again (up to `CLAIM_LOOKS_AGAIN`)."""
        spread = self._contention.spread(run.space, run.names)
        look = self._look(run, spread)
        looks_again = CLAIM_LOOKS_AGAIN
        while run.left > 0:
            shards = look.shards()
            if shards:
                self._claim_round(run, interleaved(look.read(shards), spread, self._rng))
                continue
            if run.won or not run.lost or not looks_again:
                return
            looks_again -= 1
            # Every candidate this claim tried was taken: claimable work may still
            # wait behind them. Read every shard again, once more, before answering none.
            self._contention.lost(run.space, run.names)
            spread = self._contention.spread(run.space, run.names)
            look = self._look(run, spread)
            run.lost = False

    def _look(self, run: _Claim, spread: int) -> Look:
        return Look(
            self.db, run.space, run.names, now_ms=run.now_ms, count=run.count, spread=spread, rng=self._rng
        )

    def _claim_round(self, run: _Claim, rows: Candidates) -> None:
        """Claim from one read of shards: its keys' head jobs among the rest. A job this claim
        already found past its deadline is not tried again (read again, it is still in the
        index until the caller cancels it)."""
        rows, keyed = self._expand_keys(run.space, rows, names=run.names, now_ms=run.now_ms, count=run.left)
        if run.expired:
            rows = [(row, lane) for row, lane in rows if row["sk"] not in run.expired]
            for look in keyed.values():
                look.tried.update(row["sk"] for row in look.rows if row["sk"] in run.expired)
        self._take(run, rows, keyed)
        self._settle_keys(run.space, keyed, run.now_ms)

    def _take(self, run: _Claim, rows: Candidates, keyed: Mapping[tuple[str, str], KeyLook]) -> None:
        """Claim up to the count left of `rows` (in their order). The claim's room says how
        many more of each limited name it may hand out (filled in here for names met first),
        `keyed` how many of each key's head jobs it read."""
        left = run.left
        self._fill_room(
            run.space, run.room, [row for row, _ in rows], names=run.names, count=left, now_ms=run.now_ms
        )
        chosen = self._choose(run, rows, left)
        if not chosen:
            return
        # Write-ahead: the lease book learns of these claims before they happen, so a crash
        # between the claims and the answer can never strand a running job.
        self.leases.record(
            run.space,
            [(row["sk"], t.changes["attempt"], t.changes["lease_until_ms"]) for row, t, _ in chosen],
        )
        self._claim_chosen(run, chosen, keyed)

    def _choose(self, run: _Claim, rows: Candidates, left: int) -> Chosen:
        """The candidates to try, up to a few past the count left, within the room of their
        names and the payload budget (of which each takes its share now)."""
        chosen: Chosen = []
        for row, lane in rows:
            if len(chosen) >= left + CLAIM_SPARE:
                break
            if run.room.spent(name_of(run.space, row)):
                continue
            size = row.get("payloadBytes", 0)
            if size > run.budget and (chosen or run.won):
                continue
            run.budget -= size
            lease = run.lease_ms if run.lease_ms is not None else row["timeoutMs"]
            transition = claim_transition(attempt_before=row["attempt"], now_ms=run.now_ms, lease_ms=lease)
            chosen.append((row, transition, lane))
        return chosen

    def _claim_chosen(self, run: _Claim, chosen: Chosen, keyed: Mapping[tuple[str, str], KeyLook]) -> None:
        """Claim the chosen candidates in order until the count is won, within each limited
        name's room and each key's; a keyed job takes a slot of its key in its own write. A
        candidate not won gives its share of the budget back."""
        contended: set[str] = set()
        for row, transition, lane in chosen:
            if run.left <= 0:
                break
            name = name_of(run.space, row)
            key = key_of(row, run.space)
            look = keyed.get(key) if key is not None else None
            full = run.room.spent(name) or (look is not None and look.won >= look.room)
            got = (
                _Missed.SKIPPED if lane in contended or full else self._try(run, name, row, transition, look)
            )
            if isinstance(got, _Missed):
                run.budget += row.get("payloadBytes", 0)
                if got is _Missed.LOST:
                    contended.add(lane)
                    run.lost = True
                continue
            run.won.append(got)
            if name in run.room:
                run.room[name] -= 1
            if look is not None:
                look.won += 1

    def _try(
        self, run: _Claim, name: str, row: Item, transition: Transition, look: KeyLook | None
    ) -> Item | _Missed:
        """Claim one candidate: the job's item as claimed, or why not."""
        try:
            item = self._claim_one(
                run.space,
                name,
                row,
                _key_take(transition, row, look),
                free=run.room.slots.get(name),
                shares=run.room.shares.get(name),
                extra=_homeward(row),
            )
        except ConditionFailed as failed:
            if failed.item is not None and expired(failed.item, run.now_ms):
                # Past its deadline, not taken: the lane is still this claim's to go on in.
                run.expired[row["sk"]] = job_from_item(run.space, failed.item)
                return _Missed.SKIPPED
            # Another claim won it, or it changed since the index saw it: that claim is
            # likely working down this lane (a shard, a slice, a key), so leave it the lane.
            return _Missed.LOST
        except Contended:
            return _Missed.LOST  # as for a refusal: another claim is working down this lane
        except CounterFull:
            assert look is not None
            look.room = look.won  # the key filled up since its item was read
            return _Missed.SKIPPED
        if item is None:
            run.room[name] = 0  # every slot of the name is taken
            return _Missed.SKIPPED
        return item

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
                    with_takes(transition, *transition.takes, take),
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


def _key_take(transition: Transition, row: Item, look: KeyLook | None) -> Transition:
    """A claim of a keyed job takes a slot of its key (under `perKeyConcurrency`, or none)."""
    if look is None:
        return transition
    look.tried.add(row["sk"])
    return with_takes(transition, Take(Hold("key"), look.cap))


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


def _with_payloads(space: str, won: list[Item], bodies: list[bytes | None]) -> tuple[list[Job], list[Job]]:
    """The jobs won, each with its payload parsed; and apart, those whose payload cannot be."""
    claimed: list[Job] = []
    unreadable: list[Job] = []
    for item, body in zip(won, bodies, strict=True):
        try:
            payload = None if body is None else json.loads(body)
        except (ValueError, RecursionError):
            unreadable.append(job_from_item(space, item))
            continue
        claimed.append(job_from_item(space, item, payload=payload))
    return claimed, unreadable
