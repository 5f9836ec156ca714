"""The items behind a name's spread (`shared.spread`): its width and reach on the name
item, and the sampled count of its recent creates on an item of its own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item
from shared.store.table import READY_INDEX


@dataclass(frozen=True)
class Spread:
    """How many ready shards a name has: new jobs are written to the first `width`, claims
    read the first `reach` (never fewer than `width`). `since_ms`: when either last changed."""

    width: int = keys.READY_SHARDS
    reach: int = keys.READY_SHARDS
    since_ms: int = 0

    @classmethod
    def of(cls, name_item: Item | None) -> Spread:
        item = name_item or {}
        width = int(item.get("width") or keys.READY_SHARDS)
        return cls(
            width, max(width, int(item.get("reach") or keys.READY_SHARDS)), int(item.get("spreadAtMs") or 0)
        )

    @property
    def at_rest(self) -> bool:
        return self.reach <= keys.READY_SHARDS


class SpreadStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def count(self, space: str, name: str, window: int, amount: int) -> int:
        """Add `amount` to the name's count for `window` (a new window starts from it, and
        keeps the one before as `previous`); the count of that window after it."""
        key = keys.name_load(space, name)
        names = {"#w": "window", "#c": "count"}
        vals = {":n": amount, ":w": window}
        for _ in range(3):
            try:
                item = self.db.update(
                    key, "ADD #c :n", condition="#w = :w", names=names, vals=vals, returns="ALL_NEW"
                )
                return int(item["count"])
            except ConditionFailed as failed:
                if failed.item is not None and int(failed.item.get("window", 0)) > window:
                    return 0  # a later window has begun (this create's clock is behind)
                fresh = failed.item is None
            try:
                if fresh:
                    self.db.update(
                        key,
                        "SET #w = :w, #c = :n",
                        condition="attribute_not_exists(pk)",
                        names=names,
                        vals=vals,
                    )
                else:
                    self.db.update(
                        key,
                        "SET #pw = #w, #pc = #c, #w = :w, #c = :n",
                        condition="#w < :w",
                        names=names | {"#pw": "previousWindow", "#pc": "previousCount"},
                        vals=vals,
                    )
                return amount
            except ConditionFailed:
                continue  # another create began the window: add to it
        return 0

    def load(self, space: str, name: str, window: int) -> int:
        """The name's count in the last whole window before `window`, or so far in `window`
        if more (0: no create counted lately)."""
        item = self.db.get(keys.name_load(space, name)) or {}
        latest, count = int(item.get("window", 0)), int(item.get("count", 0))
        if latest == window - 1:
            return count
        if latest == window:
            before = int(item.get("previousCount", 0)) if item.get("previousWindow") == window - 1 else 0
            return max(count, before)
        return 0

    def set_spread(self, space: str, name: str, was: Spread, *, width: int, reach: int, now_ms: int) -> bool:
        """Change the name's width and reach, if they are still as `was` read them (a
        change already made by another create or tick is not made twice)."""
        condition = "attribute_exists(pk)"
        names = {"#w": "width", "#r": "reach", "#at": "spreadAtMs"}
        vals: dict[str, int] = {":w": width, ":r": reach, ":now": now_ms}
        if was.since_ms:
            condition += " AND #at = :since"
            vals[":since"] = was.since_ms
        else:
            condition += " AND attribute_not_exists(#at)"
        try:
            self.db.update(
                keys.job_name(space, name),
                "SET #w = :w, #r = :r, #at = :now",
                condition=condition,
                names=names,
                vals=vals,
            )
        except ConditionFailed:
            return False
        return True

    def occupied(self, space: str, name: str, shards: Iterable[int]) -> bool:
        """Whether any of the name's ready shards numbered `shards` holds an entry (a
        pending job of any lane)."""
        for n in shards:
            partition = keys.ready_shard(space, name, n)
            rows, _ = self.db.query("gpk = :p", vals={":p": partition}, index=READY_INDEX, limit=1)
            if rows:
                return True
        return False
