"""Bearer tokens: minted once, stored as hashes, checked on every request.

A token reads `emit_<id>_<secret>`. The id finds the stored record in one read; the
secret is 256 random bits, so a plain SHA-256 of it is as strong as a slow hash would
be, and the comparison is constant-time.

Every request presents a token, and every token lives under one partition key (`T`),
which DynamoDB serves at most 3,000 read units a second, for every space together. So a
process keeps each token it has checked for `CACHE_MS` (keyed by a hash of the whole
presented token, so only the same secret finds it): a warm Lambda reads a busy worker's
token once every few seconds, not once a request. A revocation therefore takes effect
within `CACHE_MS` everywhere (at once in the process that made it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from shared.clock import Clock
from shared.errors import NotFound, PermissionDenied, Unauthenticated
from shared.ids import IdGenerator
from shared.schema import NewToken
from shared.store.port import TokenRecord, TokenStorePort

SCOPES = ("create", "read", "work", "admin")
CACHE_MS = 5_000
"""How long a process trusts a token it checked: a revoked token works that long at most."""
CACHE_ENTRIES = 1_000
"""Tokens a process keeps at most (it forgets them all when full: a cache, not a store)."""


@dataclass(frozen=True)
class Caller:
    token_id: str
    scopes: frozenset[str]
    spaces: frozenset[str] | None
    """None: every space."""

    def may(self, scope: str, space: str | None) -> bool:
        if scope not in self.scopes and "admin" not in self.scopes:
            return False
        if space is None:
            return self.spaces is None
        return self.spaces is None or space in self.spaces


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Tokens:
    def __init__(self, store: TokenStorePort, clock: Clock, dev_token: str | None = None) -> None:
        self.store = store
        self.clock = clock
        self.dev_token = dev_token
        self._ids = IdGenerator()
        self._checked: dict[str, tuple[int, Caller]] = {}
        """sha256 of a presented token -> (checked at, its caller)."""

    def authenticate(self, authorization: str | None) -> Caller:
        if not authorization or not authorization.startswith("Bearer "):
            raise Unauthenticated("Authorization: a Bearer token is required")
        presented = authorization.removeprefix("Bearer ").strip()
        if self.dev_token and hmac.compare_digest(presented.encode(), self.dev_token.encode()):
            return Caller("dev", frozenset(SCOPES), None)
        now, seen = self.clock.now_ms(), _hash(presented)
        cached = self._checked.get(seen)
        if cached is not None and 0 <= now - cached[0] < CACHE_MS:
            return cached[1]
        caller = self._check(presented)
        if len(self._checked) >= CACHE_ENTRIES:
            self._checked.clear()
        self._checked[seen] = (now, caller)
        return caller

    def _check(self, presented: str) -> Caller:
        """Is the secret its token's secret. One eventually consistent read (half a unit)
        answers a known token; a token it does not find, or does not match, is read again
        consistently (one minted a moment ago may not have reached that replica yet)."""
        parts = presented.split("_")
        if not (len(parts) == 3 and parts[0] == "emit" and parts[1]):
            raise Unauthenticated("Authorization: the token is not valid")
        secret = _hash(parts[2])
        record = self.store.get(parts[1], consistent=False)
        if record is None or not hmac.compare_digest(secret, record.hash):
            record = self.store.get(parts[1], consistent=True)
        if record is None or not hmac.compare_digest(secret, record.hash):
            raise Unauthenticated("Authorization: the token is not valid")
        spaces = record.spaces
        return Caller(parts[1], frozenset(record.scopes), frozenset(spaces) if spaces is not None else None)

    def authorize(self, authorization: str | None, scope: str, space: str | None) -> Caller:
        return self.permit(self.authenticate(authorization), scope, space)

    def permit(self, caller: Caller, scope: str, space: str | None) -> Caller:
        if not caller.may(scope, space):
            where = f"space {space}" if space else "all spaces"
            raise PermissionDenied(f"the token may not {scope} in {where}")
        return caller

    def mint(self, request: NewToken) -> dict[str, Any]:
        now = self.clock.now_ms()
        token_id = self._ids.new(now).lower()
        secret = secrets.token_hex(32)
        record = TokenRecord(
            id=token_id,
            name=request.name,
            scopes=tuple(sorted(set(request.scopes))),
            spaces=tuple(sorted(set(request.spaces))) if request.spaces is not None else None,
            hash=_hash(secret),
            created_at_ms=now,
        )
        self.store.put(record)
        return {"token": f"emit_{token_id}_{secret}", **self._render(record)}

    def list(self) -> list[dict[str, Any]]:
        return [self._render(record) for record in self.store.all()]

    def revoke(self, token_id: str) -> None:
        self._checked = {h: (at, c) for h, (at, c) in self._checked.items() if c.token_id != token_id}
        if not self.store.delete(token_id):
            raise NotFound(f"token {token_id} does not exist")

    @staticmethod
    def _render(record: TokenRecord) -> dict[str, Any]:
        return {
            "id": record.id,
            "name": record.name,
            "scopes": list(record.scopes),
            "spaces": list(record.spaces) if record.spaces is not None else None,
            "createdAtMs": record.created_at_ms,
        }
