"""Token items: only a hash of each secret is stored."""

from __future__ import annotations

from typing import Any

from shared.store import keys
from shared.store.dynamo import ConditionFailed, Dynamo, Item


class TokenStore:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def put(self, token_id: str, record: dict[str, Any]) -> None:
        self.db.put(keys.token(token_id) | record, condition="attribute_not_exists(pk)")

    def get(self, token_id: str, *, consistent: bool = True) -> Item | None:
        return self.db.get(keys.token(token_id), consistent=consistent)

    def all(self) -> list[Item]:
        found: list[Item] = []
        start = None
        while True:
            rows, start = self.db.query("pk = :pk", vals={":pk": "T"}, consistent=True, start=start)
            found.extend(rows)
            if start is None:
                return found

    def delete(self, token_id: str) -> bool:
        try:
            self.db.delete(keys.token(token_id), condition="attribute_exists(pk)")
        except ConditionFailed:
            return False
        return True
