"""`emit.tokens`: mint, list and revoke API tokens (an admin token on all spaces)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from urllib.parse import quote

from emit.calls import AsyncCarrier, Call, Carrier, Op, awaiting, blocking
from emit.models import MintedToken, Scope, Token


class TokenFlows:
    """The token calls, without I/O (`emit.calls`)."""

    def create(
        self, scopes: Sequence[Scope], *, spaces: Sequence[str] | None = None, name: str | None = None
    ) -> Op[MintedToken]:
        """A new token for `scopes` in `spaces` (None: every space). Its secret is in this
        answer only. Not sent again after a lost answer: that could mint two."""
        body: dict[str, object] = {"scopes": builtins.list(scopes)}
        if spaces is not None:
            body["spaces"] = builtins.list(spaces)
        if name is not None:
            body["name"] = name
        return MintedToken.from_api((yield Call("POST", "/v1/tokens", body=body, repeatable=False)))

    def list(self) -> Op[builtins.list[Token]]:
        answer = yield Call("GET", "/v1/tokens", repeatable=True)
        return [Token.from_api(t) for t in answer["tokens"]]

    def revoke(self, token_id: str) -> Op[None]:
        """Revoke at once; `NotFound` for an unknown id."""
        yield Call("DELETE", f"/v1/tokens/{quote(token_id, safe='')}", repeatable=True)


class Tokens:
    """API tokens (`Emit.tokens`; an admin token)."""

    def __init__(self, carrier: Carrier) -> None:
        self._carrier = carrier
        self._flows = TokenFlows()

    create = blocking(TokenFlows.create)
    list = blocking(TokenFlows.list)
    revoke = blocking(TokenFlows.revoke)


class AsyncTokens:
    """API tokens (`AsyncEmit.tokens`), awaited."""

    def __init__(self, carrier: AsyncCarrier) -> None:
        self._carrier = carrier
        self._flows = TokenFlows()

    create = awaiting(TokenFlows.create)
    list = awaiting(TokenFlows.list)
    revoke = awaiting(TokenFlows.revoke)
