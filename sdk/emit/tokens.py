"""`emit.tokens`: mint, list and revoke API tokens (an admin token on all spaces)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from urllib.parse import quote

from emit.models import MintedToken, Scope, Token
from emit.transport import Transport


class Tokens:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def create(
        self, scopes: Sequence[Scope], *, spaces: Sequence[str] | None = None, name: str | None = None
    ) -> MintedToken:
        """A new token for `scopes` in `spaces` (None: every space). Its secret is in this
        answer only. Not sent again after a lost answer: that could mint two."""
        body: dict[str, object] = {"scopes": builtins.list(scopes)}
        if spaces is not None:
            body["spaces"] = builtins.list(spaces)
        if name is not None:
            body["name"] = name
        return MintedToken.from_api(self._transport.call("POST", "/v1/tokens", body=body, repeatable=False))

    def list(self) -> builtins.list[Token]:
        answer = self._transport.call("GET", "/v1/tokens", repeatable=True)
        return [Token.from_api(t) for t in answer["tokens"]]

    def revoke(self, token_id: str) -> None:
        """Revoke at once; `NotFound` for an unknown id."""
        self._transport.call("DELETE", f"/v1/tokens/{quote(token_id, safe='')}", repeatable=True)
