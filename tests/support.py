"""Test helpers: an HTTP client that goes through the same gateway code as `emit dev`
(route match, API Gateway v2 event, Lambda handler), the tests' own signature check,
`emit dev`'s `Background` (driven by hand in the tests), and `eventually`."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import hmac
import itertools
import json
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar
from urllib.parse import urlencode

import boto3
import jsonschema
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.s3.models import s3_backends

from devserver import gateway
from devserver.background import Background
from devserver.wiring import BUCKET, REGION, TABLE, build_runtime
from shared import openapi
from shared.clock import Clock
from shared.config import Config
from shared.runtime import Runtime
from shared.store.table import create_table_request


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
        headers: dict[str, str] | None = None,
    ) -> Answer:
        headers = {"content-type": "application/json", "user-agent": "tests", **(headers or {})}
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

    def created(self, space: str, name: str = "n", **fields: Any) -> str:
        """Create one job of `name` in `space` (its path, `/v1/spaces/{space}`): its id."""
        answer = self.post(f"{space}/jobs", {"name": name, **fields})
        assert answer.status == 200, answer
        return str(answer.body["id"])

    def claimed(self, space: str, count: int = 1, names: list[str] | None = None) -> list[str]:
        """Claim up to `count` jobs in `space` (of `names`): the ids handed out, in order."""
        body: dict[str, Any] = {"count": count} | ({"names": names} if names else {})
        answer = self.post(f"{space}/jobs:claim", body)
        assert answer.status == 200, answer
        return [job["id"] for job in answer.body["jobs"]]


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


class LocalAws:
    """One moto mock, one set of clients, one table and one bucket for the whole session.

    Building them costs about 0.2 s on an idle machine and over a second on a busy one;
    each test only needs them empty. So the table is created once, an empty copy of
    moto's table object is kept, and before each test the table is put back to that copy
    and the bucket emptied, in moto's backend (well under a millisecond). Each test still
    gets a Runtime of its own around the shared clients, with its own clock.

    The mock is active only while a test holds a runtime: a test that starts a `mock_aws`
    of its own gets a fresh moto as always (and wipes ours; it is then built again)."""

    def __init__(self) -> None:
        self.mock = mock_aws()
        self.template: Runtime | None = None
        self.empty_table: Any = None
        self.streams: Any = None

    def runtime(self, clock: Clock) -> Runtime:
        self.mock.start(reset=False)
        tables = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].tables
        if self.template is None or TABLE not in tables:
            self.template = build_runtime(clock=clock)
            self.empty_table = copy.deepcopy(tables[TABLE])
            self.streams = boto3.client("dynamodbstreams", region_name=REGION)
        else:
            tables[TABLE] = copy.deepcopy(self.empty_table)
            self._empty_bucket()
        return dataclasses.replace(self.template, clock=clock)

    def release(self) -> None:
        self.mock.stop(remove_data=False)

    @staticmethod
    def _empty_bucket() -> None:
        bucket = s3_backends[DEFAULT_ACCOUNT_ID]["global"].buckets[BUCKET]
        for name in list(bucket.keys):
            bucket.keys.pop(name)  # disposes of each version's buffer


class EndpointAws:
    """DynamoDB on an endpoint (`EMIT_TEST_DYNAMODB_ENDPOINT`: AWS's DynamoDB Local under
    `make test-dynamodb-local`), S3 in moto, as `emit dev --dynamodb-endpoint` runs.

    Each test gets a table of its own, made before it and deleted after (a few tens of
    milliseconds each on DynamoDB Local, which keeps tables in memory); its name carries the
    xdist worker's, so workers sharing the engine never meet. The stream reader finds the
    table's own stream (`LatestStreamArn`) through `streams`, a client of the endpoint."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint.rstrip("/")
        passthrough = {"urls": [re.escape(self.endpoint) + ".*"], "services": []}
        self.mock = mock_aws(config={"core": {"passthrough": passthrough}})
        self.client = boto3.client("dynamodb", region_name=REGION, endpoint_url=self.endpoint)
        self.streams = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=self.endpoint)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.prefix = f"emit-{worker}-{secrets.token_hex(3)}"
        self.numbers = itertools.count()
        self.template: Runtime | None = None
        self.table: str | None = None

    def runtime(self, clock: Clock) -> Runtime:
        self.mock.start(reset=False)
        self.table = f"{self.prefix}-{next(self.numbers)}"
        # Without TTL: DynamoDB Local deletes expired items by the wall clock, a test's
        # ManualClock is months behind it, so a job would vanish mid-test at the engine's
        # whim. The tests expire items by hand (`Background.expire_ttl`), as on moto.
        self.client.create_table(**create_table_request(self.table))
        if self.template is None or BUCKET not in s3_backends[DEFAULT_ACCOUNT_ID]["global"].buckets:
            local = Config.local().model_copy(
                update={"dynamodb_endpoint": self.endpoint, "table": self.table}
            )
            self.template = build_runtime(clock=clock, config=local)
        else:
            LocalAws._empty_bucket()
        config = self.template.config.model_copy(update={"table": self.table})
        return dataclasses.replace(self.template, clock=clock, config=config)

    def release(self) -> None:
        if self.table is not None:
            self.client.delete_table(TableName=self.table)
            self.table = None
        self.mock.stop(remove_data=False)


T = TypeVar("T")

PATIENCE_S = 120.0
"""How long a test waits for a condition before it fails: far beyond what any condition
needs on an idle machine, so a busy one (CI: two cores, shared) never fails a test."""


def eventually(check: Callable[[], T | None], timeout: float = PATIENCE_S, interval: float = 0.02) -> T:
    """`check()`'s first truthy answer, asked again and again until it gives one; fails
    after `timeout` seconds. Tests wait for conditions this way, never for a time."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s: {check}")
        time.sleep(interval)


__all__ = ["Answer", "Api", "Background", "EndpointAws", "LocalAws", "check_signature", "eventually"]
