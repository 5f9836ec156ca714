"""Token items: only a hash of each secret is stored."""

from __future__ import annotations

from dataclasses import dataclass

from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item


@dataclass(frozen=True)
class TokenRecord:
    """A token as kept: what it may do, where, and a hash of its secret (never the secret)."""

    id: str
    name: str | None
    scopes: tuple[str, ...]
    spaces: tuple[str, ...] | None
    """None: every space."""
    hash: str
    """SHA-256 of the secret, in hex (`shared.auth`)."""
    created_at_ms: int


class TokenStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def put(self, token: TokenRecord) -> None:
        """Keep a new token (its id must be new)."""
        item = {
            "name": token.name,
            "scopes": list(token.scopes),
            "spaces": list(token.spaces) if token.spaces is not None else None,
            "hash": token.hash,
            "createdAtMs": token.created_at_ms,
        }
        self.db.put(keys.token(token.id) | item, condition="attribute_not_exists(pk)")

    def get(self, token_id: str, *, consistent: bool = True) -> TokenRecord | None:
        item = self.db.get(keys.token(token_id), consistent=consistent)
        return _record(item) if item is not None else None

    def all(self) -> list[TokenRecord]:
        """Every token, by id."""
        found: list[TokenRecord] = []
        start = None
        while True:
            rows, start = self.db.query("pk = :pk", vals={":pk": keys.TOKENS}, consistent=True, start=start)
            found.extend(_record(row) for row in rows)
            if start is None:
                return found

    def delete(self, token_id: str) -> bool:
        try:
            self.db.delete(keys.token(token_id), condition="attribute_exists(pk)")
        except ConditionFailed:
            return False
        return True


def _record(item: Item) -> TokenRecord:
    spaces = item.get("spaces")
    return TokenRecord(
        id=str(item["sk"]),
        name=item.get("name"),
        scopes=tuple(item["scopes"]),
        spaces=tuple(spaces) if spaces is not None else None,
        hash=str(item["hash"]),
        created_at_ms=int(item["createdAtMs"]),
    )
