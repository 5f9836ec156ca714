"""A claim's room: how many jobs of each limited name it may hand out (its `concurrency`'s
free slots, what its `rate` allows now), and its keys' entries read for their head jobs,
as many as each key has room for (`perKeyConcurrency`, `perKeyRate`)."""

from __future__ import annotations

from collections.abc import Mapping

from shared.store import keys
from shared.store.counters import slot_shares
from shared.store.dynamo import Item
from shared.store.jobs.looks import CLAIM_SPARE, name_of, order_of
from shared.store.jobs.parts import Parts
from shared.store.jobs.records import NameClaim
from shared.store.keyed import KeyLook

Candidates = list[tuple[Item, str]]
"""A claim's candidates in the order it tries them, each with its lane (a shard, a slice,
a key): what a race lost there makes the claim leave."""


class Room(dict[str, int]):
    """Per limited name: how many more jobs a claim may hand out; and, for a name with a
    `concurrency`, its shards' shares and the free slots read on each."""

    def __init__(self) -> None:
        super().__init__()
        self.shares: dict[str, list[int]] = {}
        self.slots: dict[str, list[int]] = {}

    def spent(self, name: str) -> bool:
        """Whether the claim may hand out no more of `name` (never, for a name without limits)."""
        return self.get(name, 1) <= 0


class Rooms(Parts):
    def _fill_room(
        self,
        space: str,
        room: Room,
        rows: list[Item],
        *,
        names: Mapping[str, NameClaim],
        count: int,
        now_ms: int,
    ) -> None:
        """How many jobs of each limited name (with candidates, not yet in `room`) this claim
        may hand out: the free slots of its `concurrency` (read, strongly consistent), and
        what its `rate` allows now (taken here, before the claims: a hand-out the claim then
        loses is not given back, so the rate is never passed, only sometimes under-used)."""
        wanted: dict[str, int] = {}
        for row in rows:
            name = name_of(space, row)
            wanted[name] = wanted.get(name, 0) + 1
        for name, found in wanted.items():
            limit = names.get(name)
            if limit is None or not limit.limited or name in room:
                continue
            allowed = min(count, found)
            if limit.concurrency is not None:
                shares = slot_shares(limit.concurrency)
                held = self.counters.running(space, name, len(shares))
                free = [max(0, share - n) for share, n in zip(shares, held, strict=True)]
                room.shares[name], room.slots[name] = shares, free
                allowed = min(allowed, sum(free))
            if allowed > 0 and limit.rate is not None:
                tokens, interval_ms = limit.rate
                allowed = self.counters.take_rate(
                    space, name, tokens=tokens, interval_ms=interval_ms, want=allowed, now_ms=now_ms
                )
            room[name] = allowed

    def _expand_keys(
        self,
        space: str,
        rows: Candidates,
        *,
        names: Mapping[str, NameClaim],
        now_ms: int,
        count: int,
    ) -> tuple[Candidates, dict[tuple[str, str], KeyLook]]:
        """Candidates with each key entry near the head replaced by its key's head jobs, as many
        as the key has room for (its item read strongly consistent, its lane from the head),
        in order of hand-out among the rest (each key a lane of its own for `_claim_chosen`).
        A full key's entry is taken out of the lanes and its lane not read: a full key's
        backlog costs a claim nothing. A key under a `perKeyRate` (its name's `per_key_rate`)
        gets no more than its rate allows now, taken here; a key whose rate is used up waits
        in the later lane until it allows one."""
        entries = _near_entries(rows, count)
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
            terms = names.get(name)
            cap, rate = (terms.per_key_concurrency, terms.per_key_rate) if terms else (None, None)
            look = KeyLook(name, str(item["concurrencyKey"]), cap, item)
            if not self._read_key(space, look, count, rate, now_ms):
                continue
            aging_ms = _aging(names, name)
            for row in look.rows:
                row["name"] = name
                found.append((order_of(row, aging_ms), row["sk"], row, f"key {name}#{look.key}"))
            looks[(name, look.key)] = look
        found += [(order_of(r, _aging(names, name_of(space, r))), r["sk"], r, lane) for r, lane in jobs]
        found.sort(key=lambda f: (f[0], f[1]))
        return [(row, lane) for _, _, row, lane in found], looks

    def _read_key(
        self, space: str, look: KeyLook, count: int, rate: tuple[int, int] | None, now_ms: int
    ) -> bool:
        """Read a key's head jobs, as many as it has room for, into `look`: whether it has any
        to hand out. A full key is delisted instead; under a rate, the room is what it allows."""
        if look.cap is not None and look.held >= look.cap:
            self.key_entries.delist(space, look.name, look.key, look.cap)
            return False
        look.room = count if look.cap is None else min(count, look.cap - look.held)
        # Read a little past the room: the index may still show jobs just claimed.
        look.read_limit = look.room + 2
        self.key_entries.lane(look, space, now_ms, look.read_limit)
        if rate is None or not look.rows:
            return True
        allowed = self.key_entries.take_rate(look, space, rate, min(look.room, len(look.rows)), now_ms)
        if not allowed:
            return False
        look.room = allowed
        return True

    def _settle_keys(self, space: str, looks: Mapping[tuple[str, str], KeyLook], now_ms: int) -> None:
        """Move each key's entry read by this claim to its next head, or out of the lanes
        (`KeyEntries.settle`)."""
        for look in looks.values():
            self.key_entries.settle(space, look, now_ms)


def _near_entries(rows: Candidates, count: int) -> list[Item]:
    """The keys' entries among the candidates a claim may try. An entry just moved to another
    shard may show in both for a moment (the index is eventually consistent): one look a key."""
    near: dict[str, Item] = {}
    for row, _ in rows[: count + CLAIM_SPARE]:
        if keys.is_key_entry(row):
            near.setdefault(row["pk"], row)
    return list(near.values())


def _aging(names: Mapping[str, NameClaim], name: str) -> int:
    """A name's aging interval in this claim (0, strict order by time, for one not in it)."""
    terms = names.get(name)
    return terms.aging_ms if terms is not None else 0
