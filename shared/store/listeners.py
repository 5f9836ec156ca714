"""Wake's items (`shared.wake`): the WebSocket connections, what each listens to, and when a
space's name was last hinted.

| item | pk | sk |
| --- | --- | --- |
| a connection: its caller and every `{space}/{name}` it listens to | `WC#{connection id}` | `-` |
| one name a connection listens to (what a hint reads) | `WL#{space}#{name}` | `{connection id}` |
| when a name was last hinted (the one-a-second coalescing) | `WH#{space}#{name}` | `-` |

A hint reads the listeners of one name in one query of their own partition. A connection's
item lists its listens, so `$disconnect` (or a post answered 410) removes them all without a
scan. Every item carries a TTL: DynamoDB deletes what a lost `$disconnect` left behind, days
late perhaps, so a reader also skips an item past its time (a janitor, not a timer).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from shared.store.dynamo import ConditionFailed, Dynamo, Item
from shared.store.table import TTL_ATTRIBUTE

CONNECTION_PREFIX = "WC#"
LISTEN_PREFIX = "WL#"
HINT_PREFIX = "WH#"
_SEPARATOR = "/"
"""Between a space and a name in a connection's list: neither may hold it."""


def connection_key(connection_id: str) -> dict[str, str]:
    return {"pk": f"{CONNECTION_PREFIX}{connection_id}", "sk": "-"}


def listen_partition(space: str, name: str) -> str:
    return f"{LISTEN_PREFIX}{space}#{name}"


def hint_key(space: str, name: str) -> dict[str, str]:
    return {"pk": f"{HINT_PREFIX}{space}#{name}", "sk": "-"}


def _ttl(until_ms: int) -> int:
    return math.ceil(until_ms / 1000)


def pair(space: str, name: str) -> str:
    return f"{space}{_SEPARATOR}{name}"


def unpair(value: str) -> tuple[str, str]:
    space, name = value.split(_SEPARATOR, 1)
    return space, name


@dataclass(frozen=True)
class Connection:
    """A connection as its item holds it: who made it, when, and what it listens to."""

    token: str
    scopes: frozenset[str]
    spaces: frozenset[str] | None
    """The spaces its token is limited to; None: every space."""
    connected_at_ms: int
    listens: frozenset[tuple[str, str]]
    """(space, name) of every listen added."""

    @classmethod
    def of(cls, item: Item) -> Connection:
        caller = item["caller"]
        spaces = caller.get("spaces")
        return cls(
            str(caller["token"]),
            frozenset(caller["scopes"]),
            frozenset(spaces) if spaces is not None else None,
            int(item["connectedAtMs"]),
            frozenset(unpair(value) for value in item.get("listens") or ()),
        )


class ConnectionGone(Exception):
    """The connection's item is gone (disconnected, or removed by a post answered 410)."""


class ListenerStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def open(self, connection_id: str, caller: dict[str, Any], *, now_ms: int, until_ms: int) -> None:
        """Record a connection made by `caller` (its token's id, scopes and spaces)."""
        self.db.put(
            connection_key(connection_id)
            | {"caller": caller, "connectedAtMs": now_ms, TTL_ATTRIBUTE: _ttl(until_ms)}
        )

    def connection(self, connection_id: str, now_ms: int) -> Connection | None:
        """The connection, unless it is gone or past its time."""
        item = self.db.get(connection_key(connection_id), consistent=True)
        if item is None or int(item.get(TTL_ATTRIBUTE, 0)) * 1000 <= now_ms:
            return None
        return Connection.of(item)

    def add(self, connection_id: str, space: str, names: Iterable[str], *, until_ms: int) -> None:
        """List `names` of `space` on the connection, then write a listen item for each.
        The connection first, so whatever removes the connection finds them all; if it is
        gone already, `ConnectionGone`, and nothing is written."""
        wanted = sorted(set(names))
        try:
            self.db.update(
                connection_key(connection_id),
                "ADD listens :listens",
                condition="attribute_exists(pk)",
                vals={":listens": {pair(space, name) for name in wanted}},
            )
        except ConditionFailed:
            raise ConnectionGone(connection_id) from None
        ttl = _ttl(until_ms)
        items = [{"pk": listen_partition(space, n), "sk": connection_id, TTL_ATTRIBUTE: ttl} for n in wanted]
        self.db.batch_put(items)

    def listeners(self, space: str, name: str, now_ms: int) -> list[str]:
        """The connections listening to `name` in `space` (a consistent read: a listen
        answered a moment ago is seen)."""
        found: list[str] = []
        start = None
        while True:
            rows, start = self.db.query(
                "pk = :pk",
                vals={":pk": listen_partition(space, name)},
                consistent=True,
                start=start,
            )
            found += [row["sk"] for row in rows if int(row.get(TTL_ATTRIBUTE, 0)) * 1000 > now_ms]
            if start is None:
                return found

    def close(self, connection_id: str) -> int:
        """Remove the connection and everything it listens to (what is gone already
        stays gone): the number of listen items removed."""
        item = self.db.get(connection_key(connection_id), consistent=True)
        if item is None:
            return 0
        listens = [unpair(value) for value in sorted(item.get("listens") or ())]
        self.db.batch_delete(
            [{"pk": listen_partition(space, name), "sk": connection_id} for space, name in listens]
            + [connection_key(connection_id)]
        )
        return len(listens)

    def mark(self, space: str, name: str, *, now_ms: int, every_ms: int, until_ms: int) -> int | None:
        """Note that `name` is hinted now, unless it was within `every_ms`: None when noted,
        else when it was last hinted (one conditional write either way)."""
        try:
            self.db.update(
                hint_key(space, name),
                "SET atMs = :now, #ttl = :ttl",
                condition="attribute_not_exists(atMs) OR atMs <= :since",
                names={"#ttl": TTL_ATTRIBUTE},
                vals={":now": now_ms, ":since": now_ms - every_ms, ":ttl": _ttl(until_ms)},
            )
        except ConditionFailed as failed:
            return int((failed.item or {}).get("atMs", now_ms))
        return None
