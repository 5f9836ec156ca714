"""Test helpers: a clock moved by hand, and an HTTP client that goes through the
same gateway code as `emit dev` (route match, API Gateway v2 event, Lambda handler)."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import urlencode

import jsonschema

from devserver import gateway
from devserver.background import StreamReader, deliver, expire_ttl, tick
from shared import openapi


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body!r})"


class Api:
    check_answers = True
    """Check every answer against the OpenAPI document (`check_answer`): every test through
    the handlers is then also a test that the document tells the truth."""

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
        shown = Answer(answer["statusCode"], answer.get("headers") or {}, json.loads(text) if text else None)
        if self.check_answers:
            check_answer(matched.route.method, matched.route.path, shown)
        return shown

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


def check_answer(method: str, route: str, answer: Answer) -> None:
    """Fail unless the OpenAPI document describes `answer`: its status is documented for the
    route, its headers are there, and its body validates against the schema for that status."""
    document = openapi.document()
    responses = document["paths"][route][method.lower()]["responses"]
    assert str(answer.status) in responses, f"{method} {route}: {answer.status} is not documented: {answer}"
    described = responses[str(answer.status)]
    for header in described.get("headers", {}):
        assert header.lower() in {h.lower() for h in answer.headers}, f"{method} {route}: no {header}"
    content = described.get("content")
    if content is None:
        assert answer.body is None, f"{method} {route}: {answer.status} has no body, but {answer}"
        return
    content_type = {k.lower(): v for k, v in answer.headers.items()}.get("content-type", "")
    assert content_type.split(";")[0] in content, f"{method} {route}: content type {content_type!r}"
    errors = sorted(_validator(method, route, answer.status).iter_errors(answer.body), key=str)
    assert not errors, f"{method} {route} {answer.status}: {errors[0].message} at {list(errors[0].path)}"


@cache
def _validator(method: str, route: str, status: int) -> jsonschema.Draft202012Validator:
    document = openapi.document()
    described = document["paths"][route][method.lower()]["responses"][str(status)]
    schema = described["content"]["application/json"]["schema"]
    # The components ride along, so the document's own `#/components/...` references resolve.
    return jsonschema.Draft202012Validator({**schema, "components": document["components"]})


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
