"""Space items: settings, the job names seen, and the count of unfinished jobs (under a cap).

The use cases ask in values (`shared.store.port.SpaceStorePort`): a space's `Settings`,
its `SpacePolicies`, the whole partition as a `SpaceState`, and writes of the fields a
PATCH sent; the items behind them stay here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared import limits
from shared.ids import IdGenerator
from shared.store import keys
from shared.store.counters import HELD
from shared.store.dynamo import ConditionFailed, Dynamo, Item, TransactionConflict, serialize
from shared.store.jobs import Reservation
from shared.store.policies import PAUSE_CHANGED, SpacePolicies, names_of
from shared.store.settings import Settings, stored_changes
from shared.store.tallies import unfinished

RESERVED = "r#"
"""The in-flight item's attributes for reservations: `r#{made at, ms}#{id}` = units left."""
STALE_RESERVATION_MS = limits.STALE_RESERVATION_MS

_ids = IdGenerator()


@dataclass(frozen=True)
class SpaceState:
    """A space as its own partition holds it, read in one query: its settings, its
    in-flight count, and its names with their policies and defaults."""

    settings: Settings
    in_flight: int
    """Jobs holding a place on its `maxInFlight` count, and reservations: counted only
    while the space has a cap (without one, `SpaceStore.unfinished` counts them)."""
    policies: SpacePolicies
    names: tuple[str, ...]
    """Every job name listed in the space, in name order."""


class SpaceStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db
        # Names this process already registered: a claim without `names` looks them up,
        # and a warm function should not rewrite them on every create.
        self._known_names: set[tuple[str, str]] = set()

    def settings(self, space: str) -> Item | None:
        """The settings item (`read_settings` is the space's `Settings`)."""
        return self.db.get(keys.settings(space))

    def read_settings(self, space: str) -> Settings:
        """The space's settings, read now (the defaults where it has set none)."""
        return Settings.from_item(self.settings(space))

    def patch_settings(self, space: str, changes: Mapping[str, Any], now_ms: int) -> None:
        """Set the settings fields a PATCH sent (`stored_changes`: None is back to the
        default, or off); creates the space if new. The stored settings are read first:
        a change of `backoff` or of a destination keeps what it does not name."""
        self.write_settings(space, stored_changes(changes, self.settings(space), now_ms))

    def space(self, space: str) -> SpaceState | None:
        """The space's own partition, in one consistent query; None: the space does not exist."""
        items = self.whole(space)
        if not items:
            return None
        return SpaceState(
            Settings.from_item(items.get("settings")),
            self.in_flight(items.get("inflight")),
            SpacePolicies.of(items),
            tuple(sorted(names_of(items))),
        )

    def policies(self, space: str) -> SpacePolicies:
        """The policies of the space and of every name, with their spreads and defaults, in
        one query (none set: the built-in ones)."""
        return SpacePolicies.of(self.whole(space))

    def name_policies(self, space: str, name: str) -> SpacePolicies:
        """The space's default policy and `name`'s own (with its spread and defaults), read
        afresh in two reads of their items rather than the whole partition."""
        found = {
            "settings": self.settings(space),
            keys.job_name(space, name)["sk"]: self.name_item(space, name),
        }
        return SpacePolicies.of({sk: item for sk, item in found.items() if item is not None})

    def write_settings(self, space: str, changes: dict[str, Any]) -> Item:
        """Set (or, for None, remove) settings fields; creates the space if new."""
        sets, removes, names, vals = [], [], {}, {}
        for i, (field, value) in enumerate(changes.items()):
            names[f"#f{i}"] = field
            if value is None:
                removes.append(f"#f{i}")
            else:
                sets.append(f"#f{i} = :v{i}")
                vals[f":v{i}"] = value
        sets.append("#kind = :kind")
        names["#kind"] = "kind"
        vals[":kind"] = "settings"
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        item = self.db.update(keys.settings(space), expression, names=names, vals=vals, returns="ALL_NEW")
        self.register_space(space)
        return item

    def name_item(self, space: str, name: str) -> Item | None:
        return self.db.get(keys.job_name(space, name))

    def write_policy(
        self, space: str, name: str | None, fields: Mapping[str, Any] | None, now_ms: int
    ) -> None:
        """Set fields of the `policy` map of the space's default (`name` None) or of a name
        (None `fields`: clear them all).

        Two writes, no read: the map is made if missing, then each field is set at its own
        path, so two PATCHes of different fields never undo each other. A clear leaves an
        empty map, so a PATCH racing it never finds the map gone. The item must exist
        (a name is listed first, with its space). A write that may lift a pause (it sets
        `paused`, or clears the map) keeps its time beside the map (`PAUSE_CHANGED`): the
        never-claimed check counts a resumed name's jobs claimable from then."""
        key = keys.settings(space) if name is None else keys.job_name(space, name)
        names = {"#p": "policy"}
        exists = "attribute_exists(pk)"
        self.db.update(
            key, "SET #p = if_not_exists(#p, :empty)", condition=exists, names=names, vals={":empty": {}}
        )
        pause = ", #pc = :now" if fields is None or "paused" in fields else ""
        if pause:
            names["#pc"] = PAUSE_CHANGED
        if fields is None:
            vals = {":empty": {}, ":now": now_ms}
            self.db.update(key, "SET #p = :empty" + pause, condition=exists, names=names, vals=vals)
            return
        if not fields:
            return
        sets: list[str] = []
        vals = {":now": now_ms} if pause else {}
        for i, (field, value) in enumerate(fields.items()):
            names[f"#f{i}"] = field
            vals[f":v{i}"] = value
            sets.append(f"#p.#f{i} = :v{i}")
        self.db.update(key, "SET " + ", ".join(sets) + pause, condition=exists, names=names, vals=vals)

    def write_job_defaults(self, space: str, name: str, fields: Mapping[str, Any] | None) -> None:
        """Set (None values: remove) fields of the `jobDefaults` map on a name item; None
        clears them all. As `write_policy`: no read, each field at its own path, so PATCHes
        of different fields or names never undo each other. The name must be listed."""
        key = keys.job_name(space, name)
        names = {"#d": "jobDefaults"}
        exists = "attribute_exists(pk)"
        empty: dict[str, Any] = {":empty": {}}
        if fields is None:
            self.db.update(key, "SET #d = :empty", condition=exists, names=names, vals=empty)
            return
        self.db.update(key, "SET #d = if_not_exists(#d, :empty)", condition=exists, names=names, vals=empty)
        sets, removes, vals = [], [], {}
        for i, (field, value) in enumerate(fields.items()):
            names[f"#f{i}"] = field
            if value is None:
                removes.append(f"#d.#f{i}")
            else:
                vals[f":v{i}"] = value
                sets.append(f"#d.#f{i} = :v{i}")
        if not sets and not removes:
            return
        expression = ("SET " + ", ".join(sets) if sets else "") + (
            " REMOVE " + ", ".join(removes) if removes else ""
        )
        self.db.update(key, expression.strip(), condition=exists, names=names, vals=vals or None)

    def whole(self, space: str) -> dict[str, Item]:
        """Every item of the space's own partition (settings, in-flight count, names), by
        sort key, in one query; empty when the space does not exist."""
        found: dict[str, Item] = {}
        start = None
        while True:
            rows, start = self.db.query(
                "pk = :pk", vals={":pk": keys.space(space)}, start=start, consistent=True
            )
            found.update((row["sk"], row) for row in rows)
            if start is None:
                return found

    def names(self, space: str) -> list[str]:
        found: list[str] = []
        start = None
        while True:
            rows, start = self.db.query(
                "pk = :pk AND begins_with(sk, :prefix)",
                vals={":pk": keys.space(space), ":prefix": keys.NAME_PREFIX},
                start=start,
            )
            found.extend(r["sk"].removeprefix(keys.NAME_PREFIX) for r in rows)
            if start is None:
                return found

    def register_names(self, space: str, names: set[str], now_ms: int) -> None:
        """List new job names, each in one transaction with the space's own listing: the
        clock finds a name only through its space, so a name is never listed without it
        (a write that fails lists neither, and the next create tries again)."""
        for name in sorted(names):
            if (space, name) in self._known_names:
                continue
            name_item = {
                "Item": serialize(keys.job_name(space, name) | {"firstSeenAtMs": now_ms}),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
            listing = {"Item": serialize(keys.space_entry(space))}
            for _ in range(8):
                try:
                    self.db.transact([{"Put": name_item}, {"Put": listing}])
                    break
                except TransactionConflict as conflict:
                    codes = {str(r["code"]) for r in conflict.reasons}
                    if "ConditionalCheckFailed" in codes:
                        break  # listed already, with its space
                    if codes - {"None", "TransactionConflict"}:
                        raise RuntimeError(f"name listing refused: {sorted(codes)}") from None
            else:
                raise RuntimeError(f"the listing of name {name} stayed contended; try again")
            self._known_names.add((space, name))

    def unfinished(self, space: str) -> int:
        """The space's unfinished jobs from the stream's counts (`shared.store.tallies`): what
        a space without a cap shows as in flight (one read, only where it is shown)."""
        return unfinished(self.db.get(keys.space_counts(space), consistent=False))

    def register_space(self, space: str) -> None:
        """List the space where the clock finds spaces (it has no other way without a scan)."""
        self.db.put(keys.space_entry(space))

    def all_spaces(self) -> list[str]:
        return self._listed(keys.SPACES)

    def listed_after(self, after: str | None, limit: int) -> tuple[list[str], bool]:
        """Up to `limit` listed spaces in name order after `after`, and whether more follow."""
        condition, vals = "pk = :pk", {":pk": keys.SPACES}
        if after is not None:
            condition, vals = "pk = :pk AND sk > :after", {**vals, ":after": after}
        found: list[str] = []
        start = None
        while len(found) <= limit:
            rows, start = self.db.query(
                condition, vals=vals, start=start, limit=limit + 1 - len(found), consistent=True
            )
            found.extend(r["sk"] for r in rows)
            if start is None:
                break
        return found[:limit], len(found) > limit

    def listed_among(self, spaces: frozenset[str]) -> set[str]:
        """Those of `spaces` that exist (are listed), in one batch read."""
        items = self.db.batch_get([keys.space_entry(s) for s in sorted(spaces)])
        return {item["sk"] for item in items}

    def in_flight_of(self, spaces: list[str]) -> dict[str, int]:
        """Each space's unfinished jobs: counted against its `maxInFlight` under a cap (exact),
        else from the stream's counts (`shared.store.tallies`, a few seconds behind)."""
        keys_ = [k for s in spaces for k in (keys.settings(s), keys.inflight(s), keys.space_counts(s))]
        items = {(i["pk"], i["sk"]): i for i in self.db.batch_get(keys_, consistent=False)}
        out: dict[str, int] = {}
        for space in spaces:
            settings = items.get((keys.space(space), "settings")) or {}
            if settings.get("maxInFlight") is not None:
                out[space] = self.in_flight(items.get((keys.space(space), "inflight")))
            else:
                counted = keys.space_counts(space)
                out[space] = unfinished(items.get((counted["pk"], counted["sk"])))
        return out

    def _listed(self, pk: str) -> list[str]:
        found: list[str] = []
        start = None
        while True:
            rows, start = self.db.query("pk = :pk", vals={":pk": pk}, start=start, consistent=True)
            found.extend(r["sk"] for r in rows)
            if start is None:
                return found

    def reserve(self, space: str, count: int, cap: int, now_ms: int) -> Reservation | None:
        """Take room for `count` new jobs on the space's `maxInFlight` count, unless that would
        pass `cap` (None: it would). The room is a reservation on the count's item that the
        jobs' own transactions turn into their holds (`JobStore.insert`); `settle` gives back
        what they did not use, and `heal` what a create that died never settled."""
        attribute = f"{RESERVED}{now_ms:013d}#{_ids.new(now_ms)}"
        try:
            self.db.update(
                keys.inflight(space),
                "ADD #held :n SET #r = :n",
                condition="attribute_not_exists(#held) OR #held <= :room",
                names={"#held": HELD, "#r": attribute},
                vals={":n": count, ":room": cap - count},
            )
        except ConditionFailed:
            return None
        return Reservation(space, attribute, count)

    def settle(self, reservation: Reservation, left: int | None = None) -> None:
        """Give back the room of `reservation` its create did not turn into jobs: `left`
        units (None: whatever the item says is left, after a fault that may or may not
        have applied a write)."""
        key = keys.inflight(reservation.space)
        names = {"#held": HELD, "#r": reservation.attribute}
        for _ in range(3):
            if left is None:
                item = self.db.get(key) or {}
                if reservation.attribute not in item:
                    return
                left = int(item[reservation.attribute])
            try:
                self.db.update(
                    key,
                    "ADD #held :minus REMOVE #r",
                    condition="#r = :left",
                    names=names,
                    vals={":minus": -left, ":left": left},
                )
                return
            except ConditionFailed:
                left = None  # not what was thought: read what is left

    def heal(self, space: str, now_ms: int) -> int:
        """Give back reservations older than any create can run (a create that died before
        settling its own): how many units came back."""
        item = self.db.get(keys.inflight(space), consistent=True) or {}
        back = 0
        for attribute, left in item.items():
            if not attribute.startswith(RESERVED):
                continue
            made_at = int(attribute.removeprefix(RESERVED).split("#", 1)[0])
            if made_at + STALE_RESERVATION_MS <= now_ms:
                self.settle(Reservation(space, attribute, int(left)), int(left))
                back += int(left)
        return back

    def in_flight(self, item: Item | None) -> int:
        """The count on the space's in-flight item (jobs holding a place, and reservations)."""
        return int((item or {}).get(HELD, 0))
