"""Counted limits: the items that count the holds jobs have, and the rate items.

A count is never kept beside a transition: the job item names the holds it has (`holds`,
a string set of `shared.machine.Hold` tags), and the write that takes or lets go of a hold
is one transaction with the counter (`JobStore.apply`). So a count always equals the
number of jobs naming it, whatever crashed where; nothing needs a recount.

- The space's `maxInFlight`: one item (`keys.inflight`), attribute `held`, taken by the
  create's own transactions and let go by the transition that finishes the job. A create
  takes room for its whole batch first, as a *reservation* on the same item that its
  inserts turn into holds (`SpaceStore.reserve`); a reservation its create never settled
  (the process died) is given back by the clock (`SpaceStore.heal`).
- A name's `concurrency`: split over up to `MAX_SHARDS` items (`keys.slots`), each a share
  of the cap, so claims of a busy name spread their transactions instead of queueing on one
  item. A claim takes a slot on a shard with room, under the condition that the shard
  stays within its share.
- A name's `rate`: a GCRA per shard (`keys.rate`), one theoretical arrival time each,
  moved by a conditional write on the value read. Hand-outs use up the rate; nothing is
  given back, so a crash can only under-use it.

- A key's `perKeyConcurrency`: the key's own item (`keys.key_item`, also its entry in the
  name's ready lanes: `shared.store.keyed`), taken and let go by the same transitions as a
  name's slot. Letting a key slot go lists the key again in the same write (it has room now).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.machine import Hold, Take
from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, serialize, values

MAX_SHARDS = 16
SLOTS_PER_SHARD = 8
"""A name's cap is split so each shard holds at least this many slots (a cap of 8 or less is
one item): a small cap stays exact and cheap, a large one spreads over up to 16 items."""
RATE_PER_SHARD = 200
"""Hand-outs per second one rate item serves (its conditional writes, each a full write unit
under contention, stay well within a partition's 1,000 a second)."""
HELD = "held"


def slot_shares(concurrency: int) -> list[int]:
    """How a name's `concurrency` is split over its slot items."""
    shards = max(1, min(MAX_SHARDS, concurrency // SLOTS_PER_SHARD))
    return [concurrency // shards + (1 if i < concurrency % shards else 0) for i in range(shards)]


@dataclass(frozen=True)
class RateShare:
    """One rate item's share: `tokens` per `interval_ms`."""

    shard: int
    tokens: int
    interval_ms: int


def rate_shares(tokens: int, interval_ms: int) -> list[RateShare]:
    """How a name's `rate` is split over its rate items: one per `RATE_PER_SHARD` hand-outs a
    second, never a share below one token."""
    per_second = tokens * 1000 / interval_ms
    shards = max(1, min(MAX_SHARDS, tokens, math.ceil(per_second / RATE_PER_SHARD)))
    return [
        RateShare(i, tokens // shards + (1 if i < tokens % shards else 0), interval_ms) for i in range(shards)
    ]


@dataclass(frozen=True)
class Owner:
    """Whose counters a job's holds are counted in: its space's, its name's, and (with the
    per-key limits, a hold kind of its own) its concurrency key's."""

    name: str
    concurrency_key: str | None = None

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> Owner | None:
        """From a job item (or a ready index entry, with its name known)."""
        return cls(str(item["name"]), item.get("concurrencyKey")) if "name" in item else None


def counter_key(space: str, owner: Owner, hold: Hold) -> dict[str, str]:
    """The item counting `hold`: one place to add a kind of counter."""
    if hold.kind == "space":
        return keys.inflight(space)
    if hold.kind == "key":
        assert owner.concurrency_key is not None, "a key slot is counted on the job's key"
        return keys.key_item(space, owner.name, owner.concurrency_key)
    return keys.slots(space, owner.name, hold.shard)


def take_action(space: str, owner: Owner, take: Take) -> dict[str, Any]:
    """A transaction's update of the counter a hold is taken on: refused at its cap."""
    update: dict[str, Any] = {
        "Key": serialize(counter_key(space, owner, take.hold)),
        "UpdateExpression": "ADD #held :one",
        "ExpressionAttributeNames": {"#held": HELD},
        "ExpressionAttributeValues": values({":one": 1}),
    }
    if take.cap is not None:
        update["ConditionExpression"] = "attribute_not_exists(#held) OR #held < :cap"
        update["ExpressionAttributeValues"] = values({":one": 1, ":cap": take.cap})
    return {"Update": update}


def release_action(
    space: str,
    owner: Owner,
    hold: Hold,
    back: tuple[str, int] | None = None,
    *,
    width: int = keys.READY_SHARDS,
) -> dict[str, Any]:
    """A transaction's update of the counter a hold is let go on. A key slot let go lists the
    key again (it has room now; a claim that finds it full takes it out again), in one of the
    `width` shards its name writes to now, and clears an empty look; `back` (the sort key and
    ready time of a job coming back to the key's lane) gives the entry a head if it had none
    (`shared.store.keyed`)."""
    update: dict[str, Any] = {
        "Key": serialize(counter_key(space, owner, hold)),
        "UpdateExpression": "ADD #held :minus",
        "ExpressionAttributeNames": {"#held": HELD},
        "ExpressionAttributeValues": values({":minus": -1}),
    }
    if hold.kind == "key":
        assert owner.concurrency_key is not None
        sets = ["gpk = :gpk"]
        vals: dict[str, Any] = {
            ":minus": -1,
            ":gpk": keys.key_entry_partition(space, owner.name, owner.concurrency_key, width),
        }
        if back is not None:
            sets += ["gsk = if_not_exists(gsk, :gsk)", "readyAtMs = if_not_exists(readyAtMs, :ready)"]
            vals |= {":gsk": back[0], ":ready": back[1]}
        update["UpdateExpression"] = f"SET {', '.join(sets)} REMOVE emptySeenAtMs ADD #held :minus"
        update["ExpressionAttributeValues"] = values(vals)
    return {"Update": update}


class Counters:
    """Reads of the counters, and the rate's GCRA."""

    def __init__(self, db: Dynamo, rand: random.Random | None = None) -> None:
        self.db = db
        self.rand = rand or random.Random()

    def running(self, space: str, name: str, shards: int = MAX_SHARDS) -> list[int]:
        """Slots held on each of a name's first `shards` slot items (strongly consistent)."""
        found = {
            row["pk"]: int(row.get(HELD, 0))
            for row in self.db.batch_get([keys.slots(space, name, n) for n in range(shards)])
        }
        return [found.get(keys.slots(space, name, n)["pk"], 0) for n in range(shards)]

    # -- rate (GCRA) --------------------------------------------------------------

    def take_rate(
        self, space: str, name: str, *, tokens: int, interval_ms: int, want: int, now_ms: int
    ) -> int:
        """Take up to `want` hand-outs of the name's rate now: how many it allows. Tries the
        rate items in a random order until one allows some (or all are used up)."""
        shares = rate_shares(tokens, interval_ms)
        order = self.rand.sample(shares, len(shares))
        for share in order[:3]:
            got = self._take_share(space, name, share, want, now_ms)
            if got:
                return got
        return 0

    def _take_share(self, space: str, name: str, share: RateShare, want: int, now_ms: int) -> int:
        return self.take_gcra(
            keys.rate(space, name, share.shard), share.tokens, share.interval_ms, want, now_ms
        )

    def take_gcra(self, key: dict[str, str], per: int, interval: int, want: int, now_ms: int) -> int:
        """GCRA on one item (a name's rate share, or a key's item for its `perKeyRate`): up to
        `want` hand-outs of `per` per `interval` ms now. Time is kept in units of 1/`per` ms, so
        one hand-out is exactly `interval` units and a full burst `per` hand-outs: `tat` (the
        theoretical arrival time) with `per` (the tokens it was reckoned in)."""
        for _ in range(8):
            item = self.db.get(key)
            tat = _tat(item, per)
            now = now_ms * per
            debt = max(0, tat - now)
            allowed = min(want, (interval * per - debt) // interval)
            if allowed <= 0:
                return 0
            new = max(tat, now) + allowed * interval
            if item is None or "tat" not in item:
                condition, vals = "attribute_not_exists(#tat)", {":new": new, ":per": per}
            else:
                condition = "#tat = :old AND #per = :oldper"
                vals = {":new": new, ":per": per, ":old": item["tat"], ":oldper": item["per"]}
            try:
                self.db.update(
                    key,
                    "SET #tat = :new, #per = :per",
                    condition=condition,
                    names={"#tat": "tat", "#per": "per"},
                    vals=vals,
                )
            except ConditionFailed:
                continue  # another claim took some meanwhile: reckon again
            return int(allowed)
        return 0

    def rate_until(self, space: str, name: str, tokens: int, interval_ms: int, now_ms: int) -> int | None:
        """When the name's rate next allows a hand-out, if it allows none now (None: it does)."""
        shares = rate_shares(tokens, interval_ms)
        rows = {
            row["pk"]: row for row in self.db.batch_get([keys.rate(space, name, s.shard) for s in shares])
        }
        soonest: int | None = None
        for share in shares:
            item = rows.get(keys.rate(space, name, share.shard)["pk"])
            until = gcra_until(item, share.tokens, share.interval_ms, now_ms)
            if until is None:
                return None
            soonest = until if soonest is None else min(soonest, until)
        return soonest


def gcra_until(item: dict[str, Any] | None, per: int, interval: int, now_ms: int) -> int | None:
    """When one GCRA item next allows a hand-out, if it allows none now (None: it does)."""
    tat = _tat(item, per)
    # Allowed once the debt is at most a burst less one hand-out.
    at = tat - interval * per + interval
    if at <= now_ms * per:
        return None
    return -(-at // per)


def _tat(item: dict[str, Any] | None, per: int) -> int:
    """The item's theoretical arrival time in units of 1/`per` ms (rescaled, rounding up, if
    it was reckoned under another share: a rate change never allows a burst it should not)."""
    if item is None or "tat" not in item:
        return 0
    tat, was = int(item["tat"]), int(item["per"])
    return tat if was == per else -(-tat * per // was)
