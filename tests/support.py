"""Test helpers: a clock moved by hand, and an HTTP client that goes through the
same gateway code as `emit dev` (route match, API Gateway v2 event, Lambda handler)."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from devserver import gateway
from devserver.background import StreamReader, deliver, expire_ttl, tick


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body!r})"


class Api:
    def __init__(self, token: str | None) -> None:
        self.token = token

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | bool | None = True,
        query: dict[str, Any] | None = None,
        raw: bytes | None = None,
    ) -> Answer:
        headers = {"content-type": "application/json", "user-agent": "tests"}
        bearer = self.token if token is True else token
        if bearer:
            headers["authorization"] = f"Bearer {bearer}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        matched = gateway.match(method, path)
        if not isinstance(matched, gateway.Matched):
            return Answer(404 if matched is None else 405, {}, None)
        event = gateway.event(
            matched, method=method, path=path, query=urlencode(query or {}), headers=headers, body=data
        )
        answer = gateway.invoke(matched, event)
        text = gateway.response_body(answer)
        return Answer(answer["statusCode"], answer.get("headers") or {}, json.loads(text) if text else None)

    def get(self, path: str, **kw: Any) -> Answer:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Answer:
        return self.request("POST", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> Answer:
        return self.request("PATCH", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Answer:
        return self.request("DELETE", path, **kw)

    def as_token(self, token: str | None) -> Api:
        return Api(token)


def check_signature(secret: str, header: str, body: bytes) -> int:
    """The tests' own check of `Emit-Signature: t=<ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">`,
    written from the contract, independent of the service's code; answers `t`."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, fields["v1"]), "signature does not match"
    return int(fields["t"])


class Background:
    """Drives what runs without a request, by hand: the stream handler with the table's
    real stream records, and the clock handler, each through its Lambda handler."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.reader = StreamReader(runtime)

    def records(self) -> list[dict[str, Any]]:
        """Stream records written since the last call (not yet handed to the handler)."""
        return self.reader.read()

    def stream(self, records: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Hand records (by default the new ones) to the stream handler, as Lambda would."""
        records = self.records() if records is None else records
        deliver(records)
        return records

    def tick(self, tick_ms: int = 60_000) -> dict[str, Any]:
        self.stream()
        return tick(tick_ms)

    def expire_ttl(self) -> int:
        return expire_ttl(self.runtime)
