"""How a claim reads its candidates: the ready shards of its names, merged in order of
hand-out (`Look`), sliced among racing claims (`interleaved`), with this process's memory
of those races (`Contention`)."""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable, Mapping

from shared.job import hand_out_order
from shared.store import keys
from shared.store.dynamo import Dynamo, Item
from shared.store.jobs.records import NameClaim
from shared.store.table import READY_INDEX

CLAIM_LOOKS_AGAIN = 3
"""Times a claim that lost every candidate it tried reads its shards again before it
answers none."""
CLAIM_SPARE = 8
"""Candidates a claim reads and may try past its count: some are taken by other claims."""
FEW_SHARDS = 4
"""Shards a claim reads at a time from a name spread wider than at rest (no more than
the count it asks for: a claim of one reads one, then another if that one was empty)."""


class Look:
    """One claim's reading of the ready shards of its names: which to read next, and
    their candidates merged in order of hand-out."""

    def __init__(
        self,
        db: Dynamo,
        space: str,
        names: Mapping[str, NameClaim],
        *,
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
        for name, terms in names.items():
            shards = keys.ready_partitions(space, name, terms.reach)
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
            aging_ms, limit = self.names[name].aging_ms, self.limits[name]
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
            found += [(order_of(r, aging_ms), r["sk"], r) for r in due + later]
        found.sort(key=lambda f: (f[0], f[1]))
        return [row for _, _, row in found]


def interleaved(rows: list[Item], spread: int, rng: random.Random) -> list[tuple[Item, str]]:
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


class Contention:
    """What this process has seen of claims racing for one name: a spread of 2**level
    (1 to `MAX_SPREAD`), raised by a claim that lost a race, lowered by claims that did not."""

    def __init__(self) -> None:
        self.levels: dict[tuple[str, str], tuple[int, int]] = {}
        """(space, name) -> (level, clean claims since it last changed)."""

    def spread(self, space: str, names: Iterable[str]) -> int:
        level = max((self.levels.get((space, n), (0, 0))[0] for n in names), default=0)
        return int(2**level)

    def lost(self, space: str, names: Iterable[str]) -> None:
        for name in names:
            level, _ = self.levels.get((space, name), (0, 0))
            self.levels[space, name] = (min(level + 1, MAX_SPREAD_LEVEL), 0)

    def clean(self, space: str, names: Iterable[str]) -> None:
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


def name_of(space: str, row: Item) -> str:
    return str(row["name"]) if "name" in row else keys.ready_name(space, row["gpk"])


def key_of(row: Item, space: str) -> tuple[str, str] | None:
    """The (name, concurrency key) of a keyed candidate; None for a job without a key."""
    key = row.get("concurrencyKey")
    return None if key is None else (name_of(space, row), str(key))


def order_of(row: Item, aging_ms: int) -> int:
    """A candidate's order of hand-out: a due job's from its sort key, a later job's from its
    ready time and priority under the aging interval in force now."""
    if keys.is_due(row["gsk"]):
        return keys.due_order(row["gsk"])
    return hand_out_order(ready_at_ms=row["readyAtMs"], priority=row.get("priority", 0), aging_ms=aging_ms)
