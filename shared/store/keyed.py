"""Concurrency keys' entries: how a claim finds the jobs of keys with room, and only those.

A job with a `concurrencyKey` waits in its key's own lane (`keys.key_lane`), not in its
name's: a full key's backlog, however deep, is never read past. The key's item
(`keys.key_item`) stands for the key in the name's ready lanes, at the sort key of the key's
head job (`gsk`, with `readyAtMs` and `priority` for a later head), so keys and unkeyed jobs
merge by order of hand-out. It is indexed only while the key has room: `gpk` is set while
`held` (the key's running jobs, counted by the per-key slot hold of `shared.machine`) is
below `perKeyConcurrency`, and removed by a claim that fills the key; the transition that
lets a key slot go sets it again, in its own transaction.

Nothing here can hide a job for good:
- a create moves the entry to its job (lower `gsk`, list it if it has room) *before* the job
  is written, so a crash between leaves an entry with nothing behind it, never a job
  without an entry;
- a job coming back to pending (retry, release, expiry) sets `gsk` in its transition's
  transaction if the key had none (`counters.release_action`), then lowers it if it goes first;
- the index is eventually consistent, so a claim that finds a key's lane empty does not
  believe it at once: it moves the entry `INDEX_LAG_MS` ahead (`emptySeenAtMs`), and only a
  second empty look that long after, with no create in between (a create clears
  `emptySeenAtMs`), removes it.

A key's `perKeyRate` is a GCRA on the same item (`Counters.take_gcra`): a claim that reads
the key takes what the rate allows; none allowed, the entry moves to the later lane at the
time the rate allows the next hand-out (`take_rate`).

The entry is listed, and moved, in the key's shard of its name's width at the time
(`keys.key_entry_partition`; the width from the policies' cache, `Widths`), as a new job
is: a name's keys spread over its shards with its load, and a claim that moves an entry
past a narrowed width moves it in, so the clock can lower the reach (`shared.spread`).

The head is kept only approximately (a claim moves it to the next job it read, on the
condition that it is still what it read): it places the key in the order; a claim that
reads the entry reads the key's lane from its true head.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shared.store import keys
from shared.store.counters import HELD, Counters, gcra_until
from shared.store.dynamo import ConditionFailed, Dynamo, Item
from shared.store.table import READY_INDEX

INDEX_LAG_MS = 5_000
"""How long the ready index may lag a write, for a key whose lane looks empty: the entry is
removed only after two empty looks this far apart."""
EMPTY_SEEN = "emptySeenAtMs"


@dataclass
class KeyLook:
    """One key's entry as a claim found it, and its lane's head jobs read for the claim."""

    name: str
    key: str
    cap: int | None
    item: Item
    rows: list[Item] = field(default_factory=list)
    """The key's claimable head jobs, in its lane's order."""
    upcoming: Item | None = None
    """The first job of the key's lane not claimable yet, if the read reached it."""
    room: int = 0
    read_limit: int = 0
    tried: set[str] = field(default_factory=set)
    won: int = 0

    @property
    def held(self) -> int:
        return int(self.item.get(HELD, 0))


Widths = Callable[[str, str], int]
"""The ready shards a name (space, name) writes to now (`shared.spread`'s width, as the
policies' cache read it)."""


def at_rest(space: str, name: str) -> int:
    return keys.READY_SHARDS


class KeyEntries:
    def __init__(self, db: Dynamo, counters: Counters, widths: Widths = at_rest) -> None:
        self.db = db
        self.counters = counters
        self.widths = widths

    def partition(self, space: str, name: str, key: str) -> str:
        """Where the key's entry is listed (or moved) now: a shard within its name's width."""
        return keys.key_entry_partition(space, name, key, self.widths(space, name))

    # -- create ---------------------------------------------------------------

    def enter(
        self,
        space: str,
        name: str,
        key: str,
        *,
        gsk: str,
        ready_at_ms: int,
        priority: int,
        cap: int | None,
        width: int = keys.READY_SHARDS,
    ) -> None:
        """Make the key's entry find a job about to be written at `gsk`: lower the head to it if
        it goes first, list the key if it has room, and clear an empty look. Reads the key item
        (strongly consistent) and writes only what is not so already. Listed or moved, the entry
        goes to its shard of the `width` the create writes its jobs to."""
        item_key = keys.key_item(space, name, key)
        shard = keys.key_entry_partition(space, name, key, width)
        for _ in range(16):
            item = self.db.get(item_key) or {}
            sets: dict[str, Any] = {}
            conditions: list[str] = []
            vals: dict[str, Any] = {}
            head = item.get("gsk")
            if head is None or gsk < head:
                sets |= {"gsk": gsk, "readyAtMs": ready_at_ms, "priority": priority}
                conditions.append("(attribute_not_exists(#gsk) OR #gsk > :gsk)")
            if "gpk" not in item and (cap is None or int(item.get(HELD, 0)) < cap):
                sets["gpk"] = shard
                if cap is not None:
                    conditions.append("(attribute_not_exists(#held) OR #held < :cap)")
                    vals[":cap"] = cap
            if not sets and EMPTY_SEEN not in item and item:
                return
            if "gpk" in item and item["gpk"] != shard:
                # Moved anyway: to the width the name has now (never listing a key a claim
                # took out of the lanes meanwhile).
                sets["gpk"] = shard
                conditions.append("attribute_exists(#gpk)")
            sets |= {"concurrencyKey": key, "name": name}
            expression = "SET " + ", ".join(f"#{a} = :{a}" for a in sets) + " REMOVE #seen"
            vals |= {f":{a}": v for a, v in sets.items()}
            condition = " AND ".join(conditions) or None
            try:
                self.db.update(
                    item_key,
                    expression,
                    condition=condition,
                    names=_used(
                        {f"#{a}": a for a in sets} | {"#held": HELD, "#seen": EMPTY_SEEN},
                        expression,
                        condition,
                    ),
                    vals=vals,
                )
                return
            except ConditionFailed:
                continue  # a claim or a release changed it meanwhile: look again
        raise RuntimeError(f"the entry of key {key!r} stayed contended; try again")

    def lower(self, space: str, name: str, key: str, *, gsk: str, ready_at_ms: int) -> None:
        """Move the key's head to `gsk` if that goes first (a job back in its lane); only the
        order depends on it, so a lost race or a fault changes nothing that matters. A listed
        entry moves within its name's width as it does; one out of the lanes stays out."""
        item_key = keys.key_item(space, name, key)
        ahead = "attribute_exists(pk) AND (attribute_not_exists(#gsk) OR #gsk > :gsk)"
        vals = {":gsk": gsk, ":ready": ready_at_ms}
        try:
            self.db.update(
                item_key,
                "SET #gsk = :gsk, readyAtMs = :ready, gpk = :gpk",
                condition=f"{ahead} AND attribute_exists(gpk)",
                names={"#gsk": "gsk"},
                vals=vals | {":gpk": self.partition(space, name, key)},
            )
            return
        except ConditionFailed as failed:
            if failed.item is None or "gpk" in failed.item:
                return  # no key item, or its head already goes first
        with contextlib.suppress(ConditionFailed):
            self.db.update(
                item_key,
                "SET #gsk = :gsk, readyAtMs = :ready",
                condition=ahead,
                names={"#gsk": "gsk"},
                vals=vals,
            )

    def running(self, space: str, name: str, key: str) -> int:
        """The key's jobs running now (its slots held; strongly consistent)."""
        item = self.db.get(keys.key_item(space, name, key)) or {}
        return int(item.get(HELD, 0))

    # -- claim ----------------------------------------------------------------

    def read(self, space: str, entries: list[Item]) -> dict[str, Item]:
        """The key items of `entries` (index rows), strongly consistent: their counts decide."""
        rows = self.db.batch_get([{"pk": e["pk"], "sk": e["sk"]} for e in entries])
        return {row["pk"]: row for row in rows}

    def lane(self, look: KeyLook, space: str, now_ms: int, limit: int) -> None:
        """Read up to `limit` claimable jobs from the head of the key's lane into `look`: due
        ones in order, then later ones whose time has come, and the first job not claimable
        yet (where the key's entry waits when none is left). As the name's lanes are read, a
        full page of due jobs leaves the later ones to a query of their own."""
        lane = keys.key_lane(space, look.name, look.key)
        rows, _ = self.db.query("gpk = :p", vals={":p": lane}, index=READY_INDEX, limit=limit)
        bound = keys.later_bound(now_ms)
        due = [r for r in rows if keys.is_due(r["gsk"])]
        later = [r for r in rows if not keys.is_due(r["gsk"])]
        if len(due) == limit:
            later, _ = self.db.query(
                "gpk = :p AND gsk BETWEEN :lo AND :hi",
                vals={":p": lane, ":lo": keys.LATER, ":hi": bound},
                index=READY_INDEX,
                limit=limit,
            )
        look.rows = due + [r for r in later if r["gsk"] <= bound]
        look.upcoming = next((r for r in later if r["gsk"] > bound), None)

    def take_rate(self, look: KeyLook, space: str, rate: tuple[int, int], want: int, now_ms: int) -> int:
        """Take up to `want` hand-outs of the key's `perKeyRate` (tokens, interval) now, a GCRA
        on the key's own item: how many it allows. None allowed: the key's entry moves to the
        later lane, at the time the rate allows the next (on the condition that it is still
        where it was read), so claims do not read it over and over meanwhile."""
        tokens, interval = rate
        item_key = keys.key_item(space, look.name, look.key)
        allowed = self.counters.take_gcra(item_key, tokens, interval, want, now_ms)
        if allowed:
            return allowed
        until = gcra_until(self.db.get(item_key), tokens, interval, now_ms) or now_ms + 1
        expression, condition = "SET #gsk = :gsk, readyAtMs = :ready", "#gsk = :read"
        vals = {":gsk": keys.later_sort(until, "-"), ":ready": until, ":read": look.item.get("gsk")}
        if "gpk" in look.item:
            # Moved: to a shard within the name's width (if still listed).
            expression += ", gpk = :gpk"
            condition += " AND attribute_exists(gpk)"
            vals[":gpk"] = self.partition(space, look.name, look.key)
        with contextlib.suppress(ConditionFailed):
            self.db.update(item_key, expression, condition=condition, names={"#gsk": "gsk"}, vals=vals)
        return 0

    def rate_until(self, space: str, name: str, key: str, rate: tuple[int, int], now_ms: int) -> int | None:
        """When the key's `perKeyRate` next allows a hand-out, if it allows none now."""
        return gcra_until(self.db.get(keys.key_item(space, name, key)), rate[0], rate[1], now_ms)

    def delist(self, space: str, name: str, key: str, cap: int) -> None:
        """Take a full key out of the name's lanes (while it is full: a release in between
        has listed it again, and stays)."""
        with contextlib.suppress(ConditionFailed):
            self.db.update(
                keys.key_item(space, name, key),
                "REMOVE gpk",
                condition="#held >= :cap",
                names={"#held": HELD},
                vals={":cap": cap},
            )

    def settle(self, space: str, look: KeyLook, now_ms: int) -> None:
        """After a claim: move the entry to the key's next head (`_next_head`), on the condition
        that it is still where this claim read it (a create or a release that moved it since
        placed it as well or better); and take the key out of the lanes if the claim filled
        it, in the same write (out of the index, the move writes no index entry)."""
        read = look.item.get("gsk")
        full = look.cap is not None and look.held + look.won >= look.cap
        if read is None:
            if full:
                self.delist(space, look.name, look.key, int(look.cap or 0))
            return
        sets, removes, vals, condition = _next_head(look, now_ms)
        vals[":read"] = read
        condition = "#gsk = :read" + condition
        if full:
            removes.append("gpk")
            condition += " AND #held >= :cap"
            vals[":cap"] = look.cap
        elif sets and "gpk" in look.item:
            # Moved: to a shard within the name's width now (if still listed), so keys' entries
            # spread as their name does, and leave the shards past a narrowed width.
            shard = self.partition(space, look.name, look.key)
            if shard != look.item["gpk"]:
                sets.append("gpk = :gpk")
                condition += " AND attribute_exists(gpk)"
                vals[":gpk"] = shard
        expression = " ".join(part for part in (_clause("SET", sets), _clause("REMOVE", removes)) if part)
        names = _used({"#gsk": "gsk", "#seen": EMPTY_SEEN, "#held": HELD}, expression, condition)
        try:
            self.db.update(
                keys.key_item(space, look.name, look.key),
                expression,
                condition=condition,
                names=names,
                vals=vals,
            )
        except ConditionFailed:
            # A create or a release moved the entry meanwhile (theirs is as good or better),
            # or one let a slot go: out of the lanes only if it is still full.
            if full:
                self.delist(space, look.name, look.key, int(look.cap or 0))


def _clause(verb: str, parts: list[str]) -> str:
    return f"{verb} {', '.join(parts)}" if parts else ""


def _next_head(look: KeyLook, now_ms: int) -> tuple[list[str], list[str], dict[str, Any], str]:
    """The key item's update after a claim read its lane (SET parts, REMOVE parts, values,
    extra condition):

    - the first job read and not tried by the claim, if any;
    - with a full page read and tried, the last of it (the lane goes on past it);
    - with only later jobs left, the first of them, if it is due within the index's lag;
    - else `INDEX_LAG_MS` ahead, marking an empty look (`emptySeenAtMs`) if nothing was
      read at all; and a second empty look, that long after the first with no create in
      between, removes the head: nothing is behind it."""
    rest = [r for r in look.rows if r["sk"] not in look.tried]
    head = ["#gsk = :gsk", "readyAtMs = :ready", "priority = :priority"]
    if rest or (look.rows and len(look.rows) >= look.read_limit):
        row = rest[0] if rest else look.rows[-1]
        vals = {
            ":gsk": row["gsk"],
            ":ready": row.get("readyAtMs", now_ms),
            ":priority": row.get("priority", 0),
        }
        return head, ["#seen"], vals, ""
    upcoming = look.upcoming
    if upcoming is not None and upcoming["readyAtMs"] < now_ms + INDEX_LAG_MS:
        vals = {
            ":gsk": upcoming["gsk"],
            ":ready": upcoming["readyAtMs"],
            ":priority": upcoming.get("priority", 0),
        }
        return head, ["#seen"], vals, ""
    empty = not look.rows and upcoming is None
    seen = look.item.get(EMPTY_SEEN)
    if empty and seen is not None and int(seen) <= now_ms - INDEX_LAG_MS:
        return [], ["#gsk", "readyAtMs", "priority", "#seen"], {":seen": seen}, " AND #seen = :seen"
    again = now_ms + INDEX_LAG_MS
    vals = {":gsk": keys.later_sort(again, "-"), ":ready": again, ":priority": 0}
    if empty:
        return [*head, "#seen = if_not_exists(#seen, :now)"], [], vals | {":now": now_ms}, ""
    return head, ["#seen"], vals, ""


def _used(names: dict[str, str], *texts: str | None) -> dict[str, str]:
    """The placeholders the expressions use (DynamoDB refuses unused ones)."""
    return {k: v for k, v in names.items() if any(t and k in t for t in texts)}
