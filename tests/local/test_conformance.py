"""`emit dev`'s fast embedded DynamoDB answers every call the store makes as plain moto does.

The whole service runs on a `Tee` (tests/local/tee.py): each DynamoDB call is made on plain
moto through boto3 and on the fast client (devserver.embedded), with the same parameters;
the store goes on with plain moto's answer. The scenario walks through what the store does
(every module of shared/store), including the refused writes, the cancelled transactions,
the paged and filtered queries and the chunked batches; then every answer, every error and
every stream record must be the same on both sides.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from moto import mock_aws

from devserver.embedded import client as fast_client
from shared.clock import ManualClock
from shared.runtime import Runtime, install
from shared.schema import NewToken
from shared.store.table import READY_INDEX
from tests.local.tee import FAST_ACCOUNT, PLAIN_ACCOUNT, Tee, stream_records, tee_runtime
from tests.support import Api, Background
from tests.timers.conftest import SECRET, Receiver

JOBS = "/v1/spaces/conf/jobs"


@pytest.fixture
def world() -> Iterator[tuple[Runtime, Tee, Api, Background, ManualClock]]:
    clock = ManualClock()
    receiver = Receiver(answers=[500, 204])
    with mock_aws():
        runtime, tee = tee_runtime(clock, transport=httpx.MockTransport(receiver))
        install(runtime)
        token = str(runtime.tokens.mint(NewToken(scopes=["admin"], name="conformance"))["token"])
        yield runtime, tee, Api(token), Background(runtime), clock
        install(None)


def _fast_answers(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Which calls moto's handler answered (the fast client left them to it)."""
    handled: Counter[str] = Counter()
    original = fast_client.DirectDynamoDB._handle

    def _handle(self: Any, operation: str, params: dict[str, Any]) -> Any:
        # ADD to a set (a report naming where its large value goes; a book's slot map marked,
        # once a process a slot: rare paths) is left to moto's handler on purpose; every other
        # shape the store sends is the fast path's.
        values = params.get("ExpressionAttributeValues", {})
        adds_a_set = operation == "UpdateItem" and any("SS" in v or "NS" in v for v in values.values())
        if not adds_a_set:
            handled[operation] += 1
        return original(self, operation, params)

    monkeypatch.setattr(fast_client.DirectDynamoDB, "_handle", _handle)
    return handled


def test_every_call_of_the_store_answers_the_same_on_the_fast_path(
    world: tuple[Runtime, Tee, Api, Background, ManualClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt, tee, api, bg, clock = world
    by_handler = _fast_answers(monkeypatch)
    _scenario(rt, api, bg, clock)

    different = tee.differences()
    assert not different, "\n".join(
        f"{c.operation}({c.params})\n  plain: {c.plain}\n  fast:  {c.fast}" for c in different[:5]
    )
    assert stream_records(PLAIN_ACCOUNT) == stream_records(FAST_ACCOUNT)
    _covered(tee)
    # The store's writes, queries and reads took the fast path (moto's handler answered none).
    fast = {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "Query", "GetItem"}
    assert not fast & set(by_handler), by_handler


def _scenario(rt: Runtime, api: Api, bg: Background, clock: ManualClock) -> None:
    # Tokens: minted (conditional put), listed, revoked, revoked again (a refused delete).
    token_id = api.post("/v1/tokens", {"scopes": ["read"], "name": "reader"}).body["id"]
    assert len(api.get("/v1/tokens").body["tokens"]) == 2
    assert api.delete(f"/v1/tokens/{token_id}").status == 204
    assert api.delete(f"/v1/tokens/{token_id}").status == 404

    # Space settings: SET and REMOVE with the new item returned; the space's items.
    api.patch("/v1/spaces/conf", {"maxEvents": 2, "webhookSecret": SECRET, "keyWindowMs": 0})
    api.patch(
        "/v1/spaces/conf", {"maxEvents": None, "completedRetentionMs": 60_000, "failedRetentionMs": 1_000}
    )
    assert api.get("/v1/spaces/conf").status == 200

    # Creates: a batch of 120 (chunked batch writes, names registered), keyed jobs
    # (transactions, one cancelled on its key), delayed jobs, payloads in side items.
    created = api.post(JOBS, [{"name": "a" if i % 3 else "b", "payload": {"i": i}} for i in range(120)]).body
    ids = [j["id"] for j in created["jobs"]]
    keyed = api.post(JOBS, {"name": "a", "key": "k1", "payload": "x"}).body
    assert api.post(JOBS, {"name": "a", "key": "k1"}).body == {"id": keyed["id"], "outcome": "DUPLICATE"}
    api.post(JOBS, {"name": "late", "delayMs": 3_600_000})
    side = api.post(JOBS, {"name": "b", "payload": os.urandom(3_000).hex()}).body["id"]
    api.post(JOBS, {"name": "hook", "callback": {"url": "http://127.0.0.1:9/hook", "headers": {"x-a": "1"}}})

    # Lists: filters and cursors over the job partitions.
    page = api.get(JOBS, query={"limit": 7}).body
    api.get(JOBS, query={"limit": 7, "cursor": page["cursor"]})
    api.get(JOBS, query={"status": "PENDING", "name": "b", "limit": 5})
    api.get(JOBS, query={"status": "FAILED"})
    api.get(f"{JOBS}/{side}")

    # Claims: the ready index, the lease book, conditional hand-outs; nothing for a name
    # without jobs; then reports of every kind.
    held = api.post(f"{JOBS}:claim", {"count": 25, "names": ["a", "b", "hook"]}).body["jobs"]
    assert len(held) == 25
    assert api.post(f"{JOBS}:claim", {"count": 5, "names": ["nothing"]}).body["jobs"] == []
    first, second, third, fourth, *rest = held
    api.post(
        f"{JOBS}:report",
        [
            {
                "id": first["id"],
                "attempt": first["attempt"],
                "progress": {"percent": 40, "message": "m"},
                "lines": [{"level": "INFO", "message": f"line {n}", "metadata": {"n": n}} for n in range(5)],
                "event": {"e": 1},
            },
            {"id": second["id"], "attempt": second["attempt"], "complete": {"result": {"ok": True}}},
            {"id": third["id"], "attempt": third["attempt"], "fail": {"error": "boom", "retryAfterMs": 0}},
            {"id": fourth["id"], "attempt": fourth["attempt"], "release": {}},
            {"id": first["id"], "attempt": first["attempt"] + 1, "touch": {}},  # stale: refused
        ],
    )
    for n in range(3):  # events past the space's cap are refused by the write's condition
        api.post(f"{JOBS}:report", {"id": first["id"], "attempt": first["attempt"], "event": {"n": n}})
    api.post(
        f"{JOBS}:report",
        [
            {"id": h["id"], "attempt": h["attempt"], "complete": {"result": os.urandom(200).hex()}}
            for h in rest
        ],
    )
    api.post(f"{JOBS}:report", {"id": second["id"], "attempt": second["attempt"], "complete": {}})  # finished
    api.get(f"{JOBS}/{first['id']}/lines", query={"limit": 2})
    api.get(f"{JOBS}/{first['id']}/lines", query={"cursor": "3"})
    api.get(f"{JOBS}/{first['id']}/events", query={"limit": 2})
    api.post(f"{JOBS}:cancel", [ids[-1], second["id"], "01ARZ3NDEKTSV4RRFFQ69G5FAV"])

    # The key of a finished job is released: a new create takes it from its holder.
    [k1] = api.post(f"{JOBS}:claim", {"count": 1, "names": ["a"]}).body["jobs"]
    api.post(f"{JOBS}:cancel", [keyed["id"]])
    assert api.post(JOBS, {"name": "a", "key": "k1"}).body["outcome"] == "NEW"
    api.post(f"{JOBS}:report", {"id": k1["id"], "attempt": k1["attempt"], "complete": {}})

    # The stream (callbacks started, tried, retried by the clock), the clock (expired
    # leases, never-claimed jobs, due callbacks), a large read of job items, retention.
    [hooked] = api.post(f"{JOBS}:claim", {"count": 1, "names": ["hook"]}).body["jobs"]
    api.post(f"{JOBS}:report", {"id": hooked["id"], "attempt": hooked["attempt"], "complete": {}})
    bg.stream(bg.stream())  # a record seen twice: its delivery is already recorded (a refused put)
    held = api.post(f"{JOBS}:claim", {"count": 3, "leaseMs": 1_000}).body["jobs"]
    clock.advance(6_000)
    bg.tick(1_000)
    clock.advance(5_000)
    bg.tick(1_000)
    rt.jobs.items("conf", ids, consistent=False)
    rt.jobs.items("conf", ids[:10], consistent=True)
    clock.advance(120_000)
    bg.stream()
    assert bg.expire_ttl() > 0
    bg.stream()
    bg.tick(1_000)


def _covered(tee: Tee) -> None:
    """The scenario made the kinds of calls the store makes (so a change that stops making
    one shows here, not as a silent gap)."""
    calls = tee.calls
    operations = {c.operation for c in calls}
    assert operations >= Tee.CALLS - Tee.UNCOMPARED, "every compared call the store makes"

    def refused(operation: str, code: str) -> bool:
        return any(
            c.operation == operation
            and c.plain.error is not None
            and c.plain.error[1]["Error"]["Code"] == code
            for c in calls
        )

    for operation in ("put_item", "update_item", "delete_item"):
        assert refused(operation, "ConditionalCheckFailedException"), operation
    assert refused("transact_write_items", "TransactionCanceledException")
    assert any(
        c.operation == "update_item" and c.plain.error and "Item" in c.plain.error[1] for c in calls
    ), "a refused update returns the item (ALL_OLD)"
    queries = [c.params for c in calls if c.operation == "query"]
    assert any(q.get("IndexName") == READY_INDEX for q in queries)
    assert any("ExclusiveStartKey" in q for q in queries)
    assert any("FilterExpression" in q for q in queries)
    assert any(q.get("ScanIndexForward") is False for q in queries)
    assert any(c.operation == "query" and "LastEvaluatedKey" in (c.plain.answer or {}) for c in calls)
    writes = [c.params for c in calls if c.operation == "batch_write_item"]
    assert sum(len(w["RequestItems"]["emit"]) == 25 for w in writes) >= 2, "a batch chunked by 25"
    assert any(any("DeleteRequest" in r for r in w["RequestItems"]["emit"]) for w in writes), "a batch delete"
    gets = [c.params for c in calls if c.operation == "batch_get_item"]
    assert any(len(g["RequestItems"]["emit"]["Keys"]) == 100 for g in gets), "a batch read chunked by 100"
