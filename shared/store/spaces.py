"""Space items: settings, the job names seen, and the count of unfinished jobs."""

from __future__ import annotations

from typing import Any

from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item, TransactionConflict, serialize


class SpaceStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db
        # Names this process already registered: a claim without `names` looks them up,
        # and a warm function should not rewrite them on every create.
        self._known_names: set[tuple[str, str]] = set()
        self._known_callbacks: set[str] = set()

    def settings(self, space: str) -> Item | None:
        return self.db.get(keys.settings(space))

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

    def write_policy(self, key: dict[str, str], fields: dict[str, Any] | None) -> None:
        """Set fields of the `policy` map on a settings or name item (None: clear them all).

        Two writes, no read: the map is made if missing, then each field is set at its own
        path, so two PATCHes of different fields never undo each other. A clear leaves an
        empty map, so a PATCH racing it never finds the map gone. The item must exist
        (a name is listed first, with its space)."""
        names = {"#p": "policy"}
        exists = "attribute_exists(pk)"
        self.db.update(
            key, "SET #p = if_not_exists(#p, :empty)", condition=exists, names=names, vals={":empty": {}}
        )
        if fields is None:
            self.db.update(key, "SET #p = :empty", condition=exists, names=names, vals={":empty": {}})
            return
        if not fields:
            return
        sets, vals = [], {}
        for i, (field, value) in enumerate(fields.items()):
            names[f"#f{i}"] = field
            vals[f":v{i}"] = value
            sets.append(f"#p.#f{i} = :v{i}")
        self.db.update(key, "SET " + ", ".join(sets), condition=exists, names=names, vals=vals)

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
                vals={":pk": keys.space(space), ":prefix": "name#"},
                start=start,
            )
            found.extend(r["sk"].removeprefix("name#") for r in rows)
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

    def register_space(self, space: str) -> None:
        """List the space where the clock finds spaces (it has no other way without a scan)."""
        self.db.put(keys.space_entry(space))

    def all_spaces(self) -> list[str]:
        return self._listed(keys.SPACES)

    def register_callbacks(self, space: str) -> None:
        """List the space among those whose callback partitions the clock reads: before
        its first job with a callback is written (once a process), never taken back."""
        if space not in self._known_callbacks:
            self.db.put(keys.callback_space(space))
            self._known_callbacks.add(space)

    def callback_spaces(self) -> list[str]:
        return self._listed(keys.CALLBACK_SPACES)

    def _listed(self, pk: str) -> list[str]:
        found: list[str] = []
        start = None
        while True:
            rows, start = self.db.query("pk = :pk", vals={":pk": pk}, start=start, consistent=True)
            found.extend(r["sk"] for r in rows)
            if start is None:
                return found

    def reserve(self, space: str, count: int, cap: int | None) -> bool:
        """Count `count` more unfinished jobs, unless that would pass `cap`. One write, however
        large the backlog: the count is kept, never recounted."""
        if count == 0:
            return True
        condition, vals = None, {":n": count}
        if cap is not None:
            condition = "attribute_not_exists(#c) OR #c <= :room"
            vals[":room"] = cap - count
        try:
            self.db.update(
                keys.inflight(space), "ADD #c :n", condition=condition, names={"#c": "count"}, vals=vals
            )
        except ConditionFailed:
            return False
        return True

    def release(self, space: str, count: int) -> None:
        """Count `count` jobs as finished (or never made)."""
        if count:
            self.db.update(keys.inflight(space), "ADD #c :n", names={"#c": "count"}, vals={":n": -count})
