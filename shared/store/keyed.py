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

The head is kept only approximately (a claim moves it to the next job it read, on the
condition that it is still what it read): it places the key in the order; a claim that
reads the entry reads the key's lane from its true head.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.store import keys
from shared.store.counters import HELD
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
    room: int = 0
    read_limit: int = 0
    tried: set[str] = field(default_factory=set)
    won: int = 0

    @property
    def held(self) -> int:
        return int(self.item.get(HELD, 0))


class KeyEntries:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    # -- create ---------------------------------------------------------------

    def enter(
        self, space: str, name: str, key: str, *, gsk: str, ready_at_ms: int, priority: int, cap: int | None
    ) -> None:
        """Make the key's entry find a job about to be written at `gsk`: lower the head to it if
        it goes first, list the key if it has room, and clear an empty look. Reads the key item
        (strongly consistent) and writes only what is not so already."""
        item_key = keys.key_item(space, name, key)
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
                sets["gpk"] = keys.key_entry_partition(space, name, key)
                if cap is not None:
                    conditions.append("(attribute_not_exists(#held) OR #held < :cap)")
                    vals[":cap"] = cap
            if not sets and EMPTY_SEEN not in item and item:
                return
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
        order depends on it, so a lost race or a fault changes nothing that matters."""
        try:
            self.db.update(
                keys.key_item(space, name, key),
                "SET #gsk = :gsk, readyAtMs = :ready",
                condition="attribute_exists(pk) AND (attribute_not_exists(#gsk) OR #gsk > :gsk)",
                names={"#gsk": "gsk"},
                vals={":gsk": gsk, ":ready": ready_at_ms},
            )
        except ConditionFailed:
            pass

    def running(self, space: str, name: str, key: str) -> int:
        """The key's jobs running now (its slots held; strongly consistent)."""
        item = self.db.get(keys.key_item(space, name, key)) or {}
        return int(item.get(HELD, 0))

    # -- claim ----------------------------------------------------------------

    def read(self, space: str, entries: list[Item]) -> dict[str, Item]:
        """The key items of `entries` (index rows), strongly consistent: their counts decide."""
        rows = self.db.batch_get([{"pk": e["pk"], "sk": e["sk"]} for e in entries])
        return {row["pk"]: row for row in rows}

    def lane(self, space: str, name: str, key: str, now_ms: int, limit: int) -> list[Item]:
        """Up to `limit` claimable jobs from the head of the key's lane: due ones in order, then
        later ones whose time has come."""
        rows, _ = self.db.query(
            "gpk = :p AND gsk <= :hi",
            vals={":p": keys.key_lane(space, name, key), ":hi": keys.later_bound(now_ms)},
            index=READY_INDEX,
            limit=limit,
        )
        return rows

    def delist(self, space: str, name: str, key: str, cap: int) -> None:
        """Take a full key out of the name's lanes (while it is full: a release in between
        has listed it again, and stays)."""
        try:
            self.db.update(
                keys.key_item(space, name, key),
                "REMOVE gpk",
                condition="#held >= :cap",
                names={"#held": HELD},
                vals={":cap": cap},
            )
        except ConditionFailed:
            pass

    def settle(self, space: str, look: KeyLook, now_ms: int) -> None:
        """After a claim: move the entry to the key's next head (the first job read and not
        tried), or ahead by the index's lag when none was read; remove it after a second
        empty look; take the key out of the lanes if the claim filled it."""
        item_key = keys.key_item(space, look.name, look.key)
        read = look.item.get("gsk")
        rest = [r for r in look.rows if r["sk"] not in look.tried]
        head_names = {"#gsk": "gsk"}
        head_vals: dict[str, Any] = {":read": read}
        condition = "#gsk = :read" if read is not None else "attribute_not_exists(#gsk)"
        if rest:
            nxt = rest[0]
            expression = "SET #gsk = :gsk, readyAtMs = :ready, priority = :priority REMOVE #seen"
            head_vals |= {
                ":gsk": nxt["gsk"],
                ":ready": nxt.get("readyAtMs", now_ms),
                ":priority": nxt.get("priority", 0),
            }
        elif look.rows and len(look.rows) >= look.read_limit:
            last = look.rows[-1]
            expression = "SET #gsk = :gsk, readyAtMs = :ready REMOVE #seen"
            head_vals |= {":gsk": last["gsk"], ":ready": last.get("readyAtMs", now_ms)}
        elif (
            not look.rows and EMPTY_SEEN in look.item and int(look.item[EMPTY_SEEN]) <= now_ms - INDEX_LAG_MS
        ):
            # Empty twice, the index's lag apart, and no create since: nothing is behind it.
            expression = "REMOVE #gsk, readyAtMs, priority, #seen"
            condition += " AND #seen = :seen"
            head_vals[":seen"] = look.item[EMPTY_SEEN]
        else:
            again = now_ms + INDEX_LAG_MS
            expression = "SET #gsk = :gsk, readyAtMs = :ready, priority = :zero"
            head_vals |= {":gsk": keys.later_sort(again, "-"), ":ready": again, ":zero": 0}
            if not look.rows:
                expression += ", #seen = if_not_exists(#seen, :now)"
                head_vals[":now"] = now_ms
            else:
                expression += " REMOVE #seen"
        if read is not None or "REMOVE #gsk" not in expression:
            try:
                self.db.update(
                    item_key,
                    expression,
                    condition=condition,
                    names=_used(head_names | {"#seen": EMPTY_SEEN}, expression, condition),
                    vals=head_vals,
                )
            except ConditionFailed:
                pass  # a create or a release moved it meanwhile: theirs is as good or better
        if look.cap is not None and look.held + look.won >= look.cap:
            self.delist(space, look.name, look.key, look.cap)


def _used(names: dict[str, str], *texts: str | None) -> dict[str, str]:
    """The placeholders the expressions use (DynamoDB refuses unused ones)."""
    return {k: v for k, v in names.items() if any(t and k in t for t in texts)}
