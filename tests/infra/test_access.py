"""Least privilege: no policy allows a `*` action, each function's role holds exactly its
entry in `infra.access.ACCESS`, and each entry is exactly what its endpoint calls."""

from __future__ import annotations

import base64
import os
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from devserver import background, gateway
from infra.access import ACCESS, TOKEN_PARTITION, Access
from shared import auth
from shared.routes import ROUTES
from shared.runtime import Runtime
from shared.store.table import READY_INDEX
from tests.infra.cfn import Json, Synthesized, as_list, module_of, resource_suffix, resources, role_statements
from tests.infra.conftest import STACK
from tests.support import Api, Background

POLICY_DOCUMENTS = {
    "AWS::IAM::Policy": "PolicyDocument",
    "AWS::IAM::ManagedPolicy": "PolicyDocument",
    "AWS::S3::BucketPolicy": "PolicyDocument",
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
}


def test_no_policy_allows_a_wildcard_action(synthesized: Synthesized) -> None:
    """(The TLS-only bucket and topic policies *deny* `s3:*` and `sns:Publish`: that is fine.)"""
    for template in synthesized.templates.values():
        for name, resource in template["Resources"].items():
            documents = []
            if resource["Type"] in POLICY_DOCUMENTS:
                documents.append(resource["Properties"][POLICY_DOCUMENTS[resource["Type"]]])
            if resource["Type"] == "AWS::IAM::Role":
                documents.extend(p["PolicyDocument"] for p in resource["Properties"].get("Policies", []))
            for document in documents:
                for statement in document["Statement"]:
                    if statement["Effect"] == "Allow":
                        assert "NotAction" not in statement, name
                        assert not [a for a in as_list(statement["Action"]) if "*" in a], (name, statement)


def test_every_route_function_and_no_other_module_has_an_access_entry() -> None:
    modules = {p.stem for p in (Path(__file__).parents[2] / "functions").glob("*.py")} - {"__init__"}
    assert {r.function for r in ROUTES} <= set(ACCESS) <= modules


_S3_ACTIONS = {"GetObject": "gets", "PutObject": "puts", "DeleteObject": "deletes"}
_STREAM_READS = {f"dynamodb:{a}" for a in ("DescribeStream", "GetRecords", "GetShardIterator", "ListStreams")}
_DEAD_LETTERS = {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
_HAND_OVER = _DEAD_LETTERS
"""The stream's and the clock's grant on the callback queue: send, nothing more."""
_CONSUME = {
    "sqs:ReceiveMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueUrl",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
}
"""The callback sender's event source reads its queue as the sender's role."""
_POSTERS = {"wake_later"}
"""The functions that make wake's posts to the WebSocket API's connections (shared.wake)."""
_HINTERS = {"stream_handler", "clock_handler", "update_name_policy", "reset_name_policy"}
"""The functions that hint but hand their posts and put-off hints to wake_later."""


def _checked_whole(statement: Json, service: set[str], actions: list[str], function: Json) -> bool:
    """Checks a statement granting X-Ray, a queue or the stream's reads, which name no table,
    index or bucket: True for one of those (the Access entry has no part for them)."""
    if service == {"xray"}:
        assert sorted(actions) == ["xray:PutTelemetryRecords", "xray:PutTraceSegments"]
        return True
    module = module_of(function)
    if service == {"sqs"}:
        # The stream's and the clock's functions hand callbacks to the sender's queue
        # (and the stream's mapping sends what keeps failing to the dead-letter queue);
        # the sender's mapping reads its queue. No other role touches a queue.
        allowed = {"stream_handler": _HAND_OVER, "clock_handler": _HAND_OVER, "callback_sender": _CONSUME}
        assert set(actions) <= allowed.get(module, set()), statement
        return True
    if service == {"execute-api"}:
        # Wake (issue 19): posting hints to the WebSocket API's connections.
        assert actions == ["execute-api:ManageConnections"] and module in _POSTERS, statement
        return True
    if service == {"lambda"}:
        # Wake: handing a hint's posts over and putting hints off, by invoking wake_later.
        assert actions == ["lambda:InvokeFunction"] and module in _HINTERS, statement
        return True
    if set(actions) <= _STREAM_READS:
        # The stream's event source mapping reads the stream as the function's role.
        assert module == "stream_handler", statement
        return True
    return False


def _tokens_only(statement: Json, names: set[str]) -> bool:
    """Checks the condition of a statement on the table: True for the one granting only the
    tokens' partition; the writes of any other are kept out of it, its reads unconditioned."""
    condition = statement.get("Condition")
    if condition == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [TOKEN_PARTITION]}}:
        return True
    if names & {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}:
        assert condition == {"ForAllValues:StringNotEquals": {"dynamodb:LeadingKeys": [TOKEN_PARTITION]}}
    else:
        assert condition is None
    return False


def _granted(emit: Json, function_id: str) -> Access:
    """The Access a function's role grants, read back from its policy statements."""
    table = next(iter(resources(emit, "AWS::DynamoDB::Table")))
    bucket = next(iter(resources(emit, "AWS::S3::Bucket")))
    logs = emit["Resources"][function_id]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    found: dict[str, set[str]] = defaultdict(set)
    tokens_only = False
    for statement in role_statements(emit, function_id):
        assert statement["Effect"] == "Allow"
        actions = as_list(statement["Action"])
        service = {a.split(":")[0] for a in actions}
        assert len(service) == 1, statement
        if _checked_whole(statement, service, actions, emit["Resources"][function_id]):
            continue
        for resource in as_list(statement["Resource"]):
            owner, suffix = resource_suffix(resource)
            names = {a.split(":")[1] for a in actions}
            if service == {"logs"}:
                assert (owner, suffix, names) == (logs, "", {"CreateLogStream", "PutLogEvents"})
            elif service == {"dynamodb"} and suffix == "":
                assert owner == table
                tokens_only |= _tokens_only(statement, names)
                found["table"] |= names
            elif service == {"dynamodb"}:
                assert (owner, suffix) == (table, f"/index/{READY_INDEX}")
                found["index"] |= names
            else:
                assert service == {"s3"} and owner == bucket and suffix.startswith("/*/*/"), resource
                (action,) = names
                found[_S3_ACTIONS[action]].add(suffix.removeprefix("/*/*/").removesuffix("*"))
    return Access(
        frozenset(found["table"]),
        frozenset(found["index"]),
        frozenset(found["gets"]),
        frozenset(found["puts"]),
        frozenset(found["deletes"]),
        tokens_only,
    )


def test_each_role_grants_exactly_its_access_entry(synthesized: Synthesized) -> None:
    emit = synthesized.templates[STACK]
    for function_id, function in resources(emit, "AWS::Lambda::Function").items():
        module = module_of(function)
        assert _granted(emit, function_id) == ACCESS[module], module


# -- what each endpoint calls, recorded under moto -----------------------------------------


@dataclass
class Calls:
    """The DynamoDB and S3 calls made while each function's handler runs."""

    module: str | None = None
    table: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    index: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    gets: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    puts: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    deletes: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    writes_to: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Partition keys each function wrote."""
    touched: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """Partition keys each function read or wrote."""

    def access(self, module: str) -> Access:
        return Access(
            frozenset(self.table[module]),
            frozenset(self.index[module]),
            frozenset(self.gets[module]),
            frozenset(self.puts[module]),
            frozenset(self.deletes[module]),
            self.touched[module] == {TOKEN_PARTITION},
        )

    def item(self, action: str, key: dict[str, Any], *, write: bool) -> None:
        assert self.module is not None, "a call outside any handler"
        self.table[self.module].add(action)
        self.touched[self.module].add(key["pk"]["S"])
        if write:
            self.writes_to[self.module].add(key["pk"]["S"])


_TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


class _Recording:
    """A client that notes each call (as the IAM action it needs) and then makes it."""

    def __init__(self, client: Any, calls: Calls, note: Callable[[Calls, str, dict[str, Any]], None]) -> None:
        self._client = client
        self._calls = calls
        self._note = note

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(**params: Any) -> Any:
            self._note(self._calls, name, params)
            return method(**params)

        return call


_SINGLE_ITEM = {  # client method -> (IAM action, the parameter holding the key, writes)
    "get_item": ("GetItem", "Key", False),
    "put_item": ("PutItem", "Item", True),
    "update_item": ("UpdateItem", "Key", True),
    "delete_item": ("DeleteItem", "Key", True),
}


def _note_query(calls: Calls, params: dict[str, Any]) -> None:
    if "IndexName" in params:
        assert calls.module is not None
        calls.index[calls.module].add("Query")
    else:
        calls.item("Query", {"pk": params["ExpressionAttributeValues"][":pk"]}, write=False)


def _note_batch_get(calls: Calls, params: dict[str, Any]) -> None:
    for request in params["RequestItems"].values():
        for key in request["Keys"]:
            calls.item("BatchGetItem", key, write=False)


def _note_batch_write(calls: Calls, params: dict[str, Any]) -> None:
    for requests in params["RequestItems"].values():
        for request in requests:
            key = (
                request["PutRequest"]["Item"] if "PutRequest" in request else request["DeleteRequest"]["Key"]
            )
            calls.item("BatchWriteItem", key, write=True)


def _note_transaction(calls: Calls, params: dict[str, Any]) -> None:
    for action in params["TransactItems"]:
        ((kind, body),) = action.items()
        calls.item(
            _TRANSACTION_ACTIONS[kind], body.get("Item") or body["Key"], write=kind != "ConditionCheck"
        )


_MANY_ITEMS = {  # client method -> what it notes of its parameters
    "query": _note_query,
    "batch_get_item": _note_batch_get,
    "batch_write_item": _note_batch_write,
    "transact_write_items": _note_transaction,
}


def _note_dynamodb(calls: Calls, name: str, params: dict[str, Any]) -> None:
    if name in _SINGLE_ITEM:
        action, holder, write = _SINGLE_ITEM[name]
        calls.item(action, params[holder], write=write)
    elif name in _MANY_ITEMS:
        _MANY_ITEMS[name](calls, params)
    else:
        raise AssertionError(f"no Access rule knows DynamoDB's {name}")


def _note_s3(calls: Calls, name: str, params: dict[str, Any]) -> None:
    assert calls.module is not None
    value = params["Key"].rsplit("/", 1)[1].split("-")[0]  # result-3: attempt 3's result
    {"get_object": calls.gets, "put_object": calls.puts, "delete_object": calls.deletes}[name][
        calls.module
    ].add(value)


@pytest.fixture
def calls(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    recorded = Calls()
    # On AWS each function runs in processes of its own, each reading policies afresh at
    # first: so here, where one process serves them all, every call reads them.
    monkeypatch.setattr(rt.policies, "cache_ms", 0)
    # Likewise each process checks a token it has not seen (the cache is per process).
    monkeypatch.setattr(auth, "CACHE_MS", 0)
    monkeypatch.setattr(rt.db, "client", _Recording(rt.db.client, recorded, _note_dynamodb))
    monkeypatch.setattr(rt.blobs, "s3", _Recording(rt.blobs.s3, recorded, _note_s3))
    invoke = gateway.invoke

    def invoke_as(matched: gateway.Matched, event: dict[str, Any]) -> dict[str, Any]:
        recorded.module = matched.route.function
        try:
            return invoke(matched, event)
        finally:
            recorded.module = None

    monkeypatch.setattr(gateway, "invoke", invoke_as)
    yield recorded


def _incompressible(size: int) -> str:
    """Text zlib cannot shrink much: it lands in S3 past 350 KB, in a side item past 512 bytes."""
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()


def _ok(answer: Any, status: int = 200) -> Any:
    assert answer.status == status, answer
    return answer.body


def test_each_access_entry_is_exactly_what_its_endpoint_calls(api: Api, calls: Calls) -> None:
    """Every endpoint, through every branch that reaches another store call: small, side-item
    and S3 values, keyed creates and their duplicates, lines, events, failures, cancels."""
    space = "/v1/spaces/billing"
    # Spaces and tokens.
    _ok(api.patch(space, {"maxAttempts": 3}))
    _ok(api.get(space))
    _ok(api.get("/v1/spaces"))
    # A name with counted limits: its claims and finishes write its counters too.
    _ok(
        api.patch(
            f"{space}/names/small/policy", {"concurrency": 5, "rate": {"tokens": 100, "intervalMs": 1_000}}
        )
    )
    token = _ok(api.post("/v1/tokens", {"scopes": ["work"], "name": "worker"}), 201)
    _ok(api.get("/v1/tokens"))
    _ok(api.delete(f"/v1/tokens/{token['id']}"), 204)
    # Creates: inline, side-item and S3 payloads; a key taken, then asked for again.
    jobs = [
        {"name": "small", "payload": {"n": 1}},
        {"name": "medium", "payload": {"blob": _incompressible(4_000)}},
        {"name": "large", "payload": {"blob": _incompressible(600_000)}},
        {"name": "keyed", "payload": {}, "key": "once"},
    ]
    created = [job["id"] for job in _ok(api.post(f"{space}/jobs", {"jobs": jobs}))["jobs"]]
    assert (
        _ok(api.post(f"{space}/jobs", {"name": "keyed", "payload": {}, "key": "once"}))["outcome"]
        == "DUPLICATE"
    )
    extra = _ok(api.post(f"{space}/jobs", {"name": "spare", "payload": {}}))["id"]
    # Claims (every name the space knows), then reports of each kind.
    claimed = {job["id"]: job for job in _ok(api.post(f"{space}/jobs:claim", {"count": 5}))["jobs"]}
    small, medium, large, keyed = created
    assert {small, medium, large, keyed} <= set(claimed)
    outcomes = _ok(
        api.post(
            f"{space}/jobs:report",
            {
                "reports": [
                    {"id": large, "attempt": 1, "complete": {"result": {"blob": _incompressible(600_000)}}},
                    {"id": medium, "attempt": 1, "complete": {"result": {"blob": _incompressible(4_000)}}},
                    {
                        "id": small,
                        "attempt": 1,
                        "fail": {"error": "x" * 100},
                        "lines": [{"level": "INFO", "message": "hello"}],
                        "event": {"step": 1},
                    },
                    {"id": keyed, "attempt": 1, "touch": {}},
                ]
            },
        )
    )["outcomes"]
    assert [o.get("status") for o in outcomes] == ["COMPLETED", "COMPLETED", "PENDING", "RUNNING"], outcomes
    # Reads (a pending job says what it waits on).
    _ok(api.get(f"{space}/jobs"))
    for job in (large, medium, small):
        _ok(api.get(f"{space}/jobs/{job}"))
    _ok(api.get(f"{space}/jobs/{small}/lines"))
    _ok(api.get(f"{space}/jobs/{small}/events"))
    # Follow links (the first makes the service's secret); following reads the lines, and a
    # result from S3 or a side item.
    for job in (large, medium, small):
        link = _ok(api.post(f"{space}/jobs/{job}/follow-links", {"ttlMs": 60_000}), 201)
        _ok(api.get(f"/v1/follow/{link['token']}", token=None))
    # A claimable job: its name's policy (read afresh after a change) says what holds it back.
    waiting = _ok(api.post(f"{space}/jobs", {"name": "spare", "payload": {}}))["id"]
    _ok(api.patch(f"{space}/names/spare/policy", {"agingIntervalMs": 30_000}))
    _ok(api.get(f"{space}/jobs/{waiting}"))
    _ok(api.post(f"{space}/jobs:cancel", {"ids": [extra]}))
    # A space with a cap: its jobs are written in transactions with the count.
    capped = "/v1/spaces/capped"
    _ok(api.patch(capped, {"maxInFlight": 10}))
    _ok(api.post(f"{capped}/jobs", {"name": "n"}))
    # Retries of failed jobs with inline, side-item and S3 payloads, then again (their marks);
    # in a capped space, the new job is written with the count.
    for redo in ("/v1/spaces/redo", capped):
        payloads = [{"n": 1}, {"blob": _incompressible(4_000)}, {"blob": _incompressible(600_000)}]
        failing = [{"name": "redo", "maxAttempts": 1, "payload": p} for p in payloads]
        old = [job["id"] for job in _ok(api.post(f"{redo}/jobs", failing))["jobs"]]
        _ok(api.post(f"{redo}/jobs:claim", {"count": 3, "names": ["redo"]}))
        _ok(api.post(f"{redo}/jobs:report", [{"id": i, "attempt": 1, "fail": {}} for i in old]))
        _ok(api.post(f"{redo}/jobs:retry", old))
        _ok(api.post(f"{redo}/jobs:retry", {"ids": old}))
    # Flow control: a policy set before the name's first job, read and reset; diagnostics.
    _ok(api.patch(f"{space}/names/fresh/policy", {"paused": True}))
    _ok(api.get(f"{space}/names/fresh/policy"))
    _ok(api.post(f"{space}/names/other/policy:reset"))
    _ok(api.get(f"{space}/diagnostics"))
    _ok(api.get(f"{space}/metrics"))
    # Schedules: made, replaced, read, listed, paused, triggered (a job through the create
    # path), deleted.
    nightly = f"{space}/schedules/nightly"
    _ok(api.request("PUT", nightly, {"cron": "@daily", "job": {"name": "n", "payload": {"n": 1}}}))
    _ok(api.request("PUT", nightly, {"cron": "@hourly", "job": {"name": "n", "payload": "x" * 600}}))
    _ok(api.get(nightly))
    _ok(api.get(f"{space}/schedules"))
    _ok(api.patch(nightly, {"cron": "0 0 1 1 *"}))  # filed in a slot of its own: its mark too
    _ok(api.patch(nightly, {"paused": True}))
    _ok(api.post(f"{nightly}:trigger"))
    _ok(api.delete(nightly), 204)
    # In a space with a cap, a trigger's job takes room on the count (UpdateItem).
    _ok(api.request("PUT", f"{capped}/schedules/s", {"cron": "@daily", "job": {"name": "n"}}))
    _ok(api.post(f"{capped}/schedules/s:trigger"))
    _ok(api.get("/v1/openapi.json", token=None))

    for route in ROUTES:
        used, granted = calls.access(route.function), ACCESS[route.function]
        assert used == granted, f"{route.function} calls {used}\nbut ACCESS grants {granted}"
        if not ACCESS[route.function].tokens_only:
            assert TOKEN_PARTITION not in calls.writes_to[route.function], route.function


def test_the_stream_and_clock_entries_are_exactly_what_they_call(
    api: Api, calls: Calls, rt: Runtime, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Callbacks (delivered, retried), notices (one with its payload in S3), leases (expired,
    renewed), never-claimed jobs, deadlines (one cancelled, one filed again), and a removal
    by retention with side items, S3 objects, lines, events and a key."""
    tried: set[bytes] = set()

    def receiver(request: httpx.Request) -> httpx.Response:
        """Fails each callback's first try, so the clock retries every one of them."""
        first = request.content not in tried
        tried.add(request.content)
        return httpx.Response(500 if first else 204)

    rt.dispatcher.transport = httpx.MockTransport(receiver)
    handler = background.handler

    def recorded(function: str) -> Any:
        inner = handler(function)

        def run(event: dict[str, Any], context: Any) -> Any:
            calls.module = function
            try:
                return inner(event, context)
            finally:
                calls.module = None

        return run

    monkeypatch.setattr(background, "handler", recorded)
    bg = Background(rt)
    space = "/v1/spaces/later"
    hook = {"url": "https://example.com/hook"}
    # Every completed job sends a settled notice: one whose result is large goes to S3.
    notices = {"onSettled": {"name": "audit", "statuses": ["COMPLETED"]}}
    _ok(api.patch(space, {"webhookSecret": "s" * 20, "completedRetentionMs": 60_000, **notices}))
    big = {"blob": _incompressible(600_000)}
    done, other, renewed, silent, _, timed, _ = (
        job["id"]
        for job in _ok(
            api.post(
                f"{space}/jobs",
                [
                    {"name": "done", "payload": big, "key": "k", "callback": hook},
                    {"name": "done", "payload": {"blob": _incompressible(4_000)}, "callback": hook},
                    {"name": "renewed"},
                    {"name": "silent"},
                    {"name": "never", "delayMs": 1},
                    {"name": "timed", "expiresInMs": 5_000},
                    {"name": "timed", "expiresInMs": 9 * 86_400_000},
                ],
            )
        )["jobs"]
    )
    # A schedule that fires at the first tick, and one that skips while its job is unfinished.
    _ok(api.request("PUT", f"{space}/schedules/often", {"cron": "* * * * *", "job": {"name": "often"}}))
    skip = {"cron": "* * * * *", "job": {"name": "often"}, "overlap": "SKIP"}
    _ok(api.request("PUT", f"{space}/schedules/skip", skip))
    _ok(
        api.post(
            f"{space}/jobs:claim", {"count": 4, "names": ["done", "renewed", "silent"], "leaseMs": 5_000}
        )
    )
    _ok(
        api.post(
            f"{space}/jobs:report",
            [
                {
                    "id": done,
                    "attempt": 1,
                    "lines": [{"level": "INFO", "message": "m"}],
                    "event": {"e": 1},
                    "complete": {"result": {"blob": _incompressible(600_000)}},
                },
                {"id": other, "attempt": 1, "complete": {"result": {"blob": _incompressible(4_000)}}},
                {"id": renewed, "attempt": 1, "touch": {"leaseMs": 60_000}},
            ],
        )
    )
    bg.stream()  # the first try fails (500)
    clock.advance(10_000)
    bg.tick()  # the retry succeeds; the silent lease expires; the renewed one is filed again
    assert _ok(api.get(f"{space}/jobs/{silent}"))["error"] == "lease expired"
    assert _ok(api.get(f"{space}/jobs/{timed}"))["error"] == "expired"  # the other is filed again
    clock.advance(8 * 86_400_000)
    bg.tick()  # never claimed
    calls.module = "ttl janitor"  # emit dev's stand-in for DynamoDB's TTL, not a function
    assert bg.expire_ttl() >= 1
    calls.module = None
    bg.stream()  # removals
    # Retried after its lease expired, then never claimed: failed by the window.
    assert _ok(api.get(f"{space}/jobs/{silent}"))["error"] == "not claimed within 7d"
    for module in ("stream_handler", "clock_handler", "callback_sender"):
        used, granted = calls.access(module), ACCESS[module]
        assert used == granted, f"{module} calls {used}\nbut ACCESS grants {granted}"
        assert TOKEN_PARTITION not in calls.writes_to[module], module
