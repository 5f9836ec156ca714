"""`emit dev`'s transactions with updates (a claim or a finish of a limited name) are done by
the fast embedded DynamoDB itself, as plain moto does them, without copying the table.

Each transaction goes through a `Tee` (plain moto through boto3, and the fast client):
answers, errors (code, message, cancellation reasons), the items left and the stream records
must be the same, and moto's handler (which copies every table a transaction touches) must
not have answered any of them.
"""

from __future__ import annotations

import contextlib
import copy
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from moto import mock_aws
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import Table

from devserver import wiring
from devserver.embedded import client as fast_client
from shared.clock import ManualClock
from shared.runtime import Runtime, install
from shared.schema import NewToken
from tests.local.tee import FAST_ACCOUNT, PLAIN_ACCOUNT, Tee, stream_records, table_items, tee_runtime
from tests.support import Api, Background
from tests.timers.conftest import Receiver

T = "emit"
SPACE = "/v1/spaces/tx"
JOBS = f"{SPACE}/jobs"


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def put(pk: str, sk: str, **attrs: Any) -> dict[str, Any]:
    return {"Put": {"TableName": T, "Item": key(pk, sk) | attrs}}


def update(pk: str, sk: str, expression: str, **more: Any) -> dict[str, Any]:
    return {"Update": {"TableName": T, "Key": key(pk, sk), "UpdateExpression": expression, **more}}


N1 = {":one": {"N": "1"}}

# (transaction, whether moto's handler answers it: only requests moto's parsers refuse)
TRANSACTIONS: list[tuple[list[dict[str, Any]], bool]] = [
    # Items to work on: a counter, a job-like item with a set, a map and a list.
    (
        [
            put("c", "1", held={"N": "2"}, gpk={"S": "g"}, gsk={"S": "s1"}),
            put(
                "j",
                "1",
                status={"S": "PENDING"},
                m={"M": {"x": {"N": "1"}}},
                l={"L": [{"S": "p"}]},
                n={"N": "7"},
            ),
            put("d", "1", v={"S": "gone soon"}),
        ],
        False,
    ),
    ([update("j", "1", "ADD tags :ab", ExpressionAttributeValues={":ab": {"SS": ["a", "b"]}})], False),
    # Success: Update (ADD, SET, REMOVE) + Put + Delete + ConditionCheck.
    (
        [
            update(
                "c",
                "1",
                "SET gpk = :g REMOVE gsk ADD #held :one",
                ConditionExpression="attribute_not_exists(#held) OR #held < :cap",
                ExpressionAttributeNames={"#held": "held"},
                ExpressionAttributeValues=N1 | {":cap": {"N": "3"}, ":g": {"S": "g2"}},
            ),
            put("p", "1", v={"S": "new"}),
            {"Delete": {"TableName": T, "Key": key("d", "1")}},
            {
                "ConditionCheck": {
                    "TableName": T,
                    "Key": key("j", "1"),
                    "ConditionExpression": "#s = :s",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": {":s": {"S": "PENDING"}},
                }
            },
        ],
        False,
    ),
    # The condition of the 2nd action fails: the 1st (and the 3rd) are cancelled, the
    # refused item returned (ALL_OLD).
    (
        [
            update(
                "j",
                "1",
                "SET #s = :r",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":r": {"S": "RUNNING"}},
            ),
            update(
                "c",
                "1",
                "ADD #held :one",
                ConditionExpression="attribute_not_exists(#held) OR #held < :cap",
                ExpressionAttributeNames={"#held": "held"},
                ExpressionAttributeValues=N1 | {":cap": {"N": "3"}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ),
            put("q", "1"),
        ],
        False,
    ),
    # Updates of the forms only moto's executors apply: if_not_exists, arithmetic, nested
    # paths, list_append, ADD and DELETE of a set; an update of a missing item creates it.
    (
        [
            update(
                "j",
                "1",
                "SET gsk = if_not_exists(gsk, :g), n = n + :one, m.y = :one, l = list_append(l, :l) "
                "DELETE tags :del",
                ExpressionAttributeValues=N1
                | {
                    ":a": {"S": "a"},
                    ":g": {"S": "s9"},
                    ":l": {"L": [{"S": "q"}]},
                    ":add": {"SS": ["c"]},
                    ":del": {"SS": ["a"]},
                },
                ConditionExpression="contains(tags, :a)",
            ),
            update("new", "1", "SET a = if_not_exists(a, :one)", ExpressionAttributeValues=N1),
            update("new", "3", "ADD tags :add", ExpressionAttributeValues={":add": {"SS": ["c"]}}),
            update("new", "2", "ADD n :one", ExpressionAttributeValues=N1),
        ],
        False,
    ),
    # A ValidationException of an update (ADD to a string, the key changed, too large an
    # item) ends the transaction: what came before it is undone.
    (
        [
            put("v", "1"),
            update(
                "j",
                "1",
                "ADD #s :one",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=N1,
            ),
        ],
        False,
    ),
    ([put("v", "2"), update("j", "1", "SET sk = :k", ExpressionAttributeValues={":k": {"S": "x"}})], False),
    (
        [
            put("v", "3"),
            update("j", "1", "SET big = :b", ExpressionAttributeValues={":b": {"S": "x" * 405_000}}),
        ],
        False,
    ),
    ([put("v", "4"), update("j", "1", "SET a = :missing", ExpressionAttributeValues=N1)], False),
    # Two actions on one item: a ValidationException, the first undone.
    ([update("c", "1", "ADD held :one", ExpressionAttributeValues=N1), put("c", "1")], False),
    (
        [
            update("c", "1", "ADD held :one", ExpressionAttributeValues=N1),
            {
                "Delete": {
                    "TableName": T,
                    "Key": key("c", "1"),
                    "ConditionExpression": "attribute_exists(nope)",
                }
            },
        ],
        False,
    ),
    # Refused before anything runs: an unused name, empty values, a missing table.
    (
        [
            update(
                "c", "1", "ADD held :one", ExpressionAttributeNames={"#u": "u"}, ExpressionAttributeValues=N1
            )
        ],
        False,
    ),
    ([update("c", "1", "REMOVE gsk", ExpressionAttributeValues={})], False),
    ([update("c", "1", "SET a = :v", ExpressionAttributeValues={":v": {"S": ""}})], False),
    ([{"Update": {"TableName": "nope", "Key": key("c", "1"), "UpdateExpression": "REMOVE a"}}], True),
    # Refused by moto's parser: moto's handler answers.
    ([update("c", "1", "SET = :v", ExpressionAttributeValues={":v": {"S": "x"}})], True),
    # A cancelled update-only transaction, and a successful one to end with.
    (
        [
            update(
                "c",
                "1",
                "ADD held :one",
                ConditionExpression="held < :cap",
                ExpressionAttributeValues=N1 | {":cap": {"N": "0"}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ),
            update(
                "missing",
                "1",
                "SET a = :one",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues=N1,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ),
        ],
        False,
    ),
    (
        [update("c", "1", "ADD held :minus REMOVE gpk", ExpressionAttributeValues={":minus": {"N": "-1"}})],
        False,
    ),
]


@pytest.fixture
def tee() -> Iterator[Tee]:
    with mock_aws():
        _, found = tee_runtime(ManualClock())
        yield found


def _left_to_moto(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The transactions moto's handler answered (the fast client left them to it)."""
    handled: list[Any] = []
    original = fast_client.DirectDynamoDB._handle

    def _handle(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if operation == "TransactWriteItems":
            handled.append(params["TransactItems"])
        return original(self, operation, params)

    monkeypatch.setattr(fast_client.DirectDynamoDB, "_handle", _handle)
    return handled


def _same(tee: Tee) -> None:
    different = tee.differences()
    assert not different, "\n".join(
        f"{c.operation}({str(c.params)[:300]})\n  plain: {c.plain}\n  fast:  {c.fast}" for c in different[:5]
    )
    assert table_items(PLAIN_ACCOUNT) == table_items(FAST_ACCOUNT)
    assert stream_records(PLAIN_ACCOUNT) == stream_records(FAST_ACCOUNT)


def test_transactions_of_every_action_kind_answer_the_same(tee: Tee, monkeypatch: pytest.MonkeyPatch) -> None:
    left = _left_to_moto(monkeypatch)
    for actions, _ in TRANSACTIONS:
        with contextlib.suppress(Exception):  # both sides' errors are compared by the tee
            tee.transact_write_items(TransactItems=actions)
    _same(tee)
    assert [str(a)[:80] for a in left] == [str(a)[:80] for a, by_moto in TRANSACTIONS if by_moto]
    errors = Counter(c.plain.error[1]["Error"]["Code"] for c in tee.calls if c.plain.error is not None)
    assert errors == {
        "TransactionCanceledException": 2,
        "ValidationException": 9,
        "ResourceNotFoundException": 1,
    }


@pytest.fixture
def world() -> Iterator[tuple[Runtime, Tee, Api, Background, ManualClock]]:
    clock = ManualClock()
    with mock_aws():
        runtime, tee = tee_runtime(clock, transport=httpx.MockTransport(Receiver(answers=[204])))
        install(runtime)
        token = str(runtime.tokens.mint(NewToken(scopes=["admin"], name="transactions"))["token"])
        yield runtime, tee, Api(token), Background(runtime), clock
        install(None)


def test_the_stores_limited_claims_and_finishes_answer_the_same(
    world: tuple[Runtime, Tee, Api, Background, ManualClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capped name, keyed jobs and a space's `maxInFlight`: every claim and finish is a
    transaction with updates of counters, some of them refused at their caps."""
    _, tee, api, bg, clock = world
    left = _left_to_moto(monkeypatch)
    _limited_claims_and_finishes(api, bg, clock)
    _same(tee)
    assert left == [], "the fast client did every transaction"
    transactions = [c for c in tee.calls if c.operation == "transact_write_items"]
    assert any(c.plain.error for c in transactions), "a transaction cancelled at a cap"
    assert sum(any("Update" in a for a in c.params["TransactItems"]) for c in transactions) > 10


def _limited_claims_and_finishes(api: Api, bg: Background, clock: ManualClock) -> None:
    assert api.patch(f"{SPACE}/names/capped/policy", {"concurrency": 2}).status == 200
    assert api.patch(f"{SPACE}/names/keyed/policy", {"perKeyConcurrency": 1}).status == 200
    api.post(JOBS, [{"name": "capped", "payload": {"i": i}} for i in range(6)])
    api.post(JOBS, [{"name": "keyed", "concurrencyKey": f"k{i % 2}"} for i in range(4)])
    held = api.post(f"{JOBS}:claim", {"count": 5, "names": ["capped", "keyed"]}).body["jobs"]
    assert sorted(h["name"] for h in held) == ["capped", "capped", "keyed", "keyed"]
    assert api.post(f"{JOBS}:claim", {"count": 5, "names": ["capped", "keyed"]}).body["jobs"] == []
    first, second, third, fourth = held
    api.post(
        f"{JOBS}:report",
        [
            {"id": first["id"], "attempt": first["attempt"], "complete": {"result": {"ok": True}}},
            {"id": second["id"], "attempt": second["attempt"], "fail": {"error": "boom", "retryAfterMs": 0}},
            {"id": third["id"], "attempt": third["attempt"], "release": {}},
            {"id": fourth["id"], "attempt": fourth["attempt"] + 1, "complete": {}},  # stale: refused
        ],
    )
    api.post(f"{JOBS}:claim", {"count": 3, "names": ["capped", "keyed"], "leaseMs": 1_000})
    clock.advance(6_000)
    bg.tick(1_000)  # expired leases give their slots back
    # A space capped in flight: creates reserve room, claims turn it into holds.
    assert api.patch(SPACE, {"maxInFlight": 3}).status == 200
    api.post(JOBS, [{"name": "spaced", "payload": i} for i in range(4)])
    for h in api.post(f"{JOBS}:claim", {"count": 4, "names": ["spaced", "capped", "keyed"]}).body["jobs"]:
        api.post(f"{JOBS}:report", {"id": h["id"], "attempt": h["attempt"], "complete": {}})
    api.post(f"{JOBS}:cancel", [h["id"] for h in held])
    bg.stream()


def _copies(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Deep copies of tables and of items, counted."""
    made: Counter[str] = Counter()
    item_copy = Item.__deepcopy__

    def table_copy(self: Table, memo: dict[int, Any]) -> Table:
        made["table"] += 1
        copied: Table = object.__new__(type(self))
        memo[id(self)] = copied
        for name, value in vars(self).items():
            setattr(copied, name, copy.deepcopy(value, memo))
        return copied

    def counted_item_copy(self: Item, memo: dict[int, Any]) -> Item:
        made["item"] += 1
        return item_copy(self, memo)

    monkeypatch.setattr(Table, "__deepcopy__", table_copy, raising=False)
    monkeypatch.setattr(Item, "__deepcopy__", counted_item_copy)
    return made


@pytest.mark.parametrize("stored", [100, 1_000])
def test_a_limited_claim_and_finish_copy_no_table(stored: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's own transaction deep-copies every table it touches: at each claim and finish
    of a limited name, `emit dev` copied every stored job. The fast client copies at most
    the items a transaction writes, however many are stored."""
    with mock_aws():
        runtime = wiring.build_runtime(clock=ManualClock(), fast=True)
        install(runtime)
        try:
            api = Api(str(runtime.tokens.mint(NewToken(scopes=["admin"], name="copies"))["token"]))
            api.post(JOBS, [{"name": "stored", "payload": {"i": i}} for i in range(stored)])
            api.patch(f"{SPACE}/names/capped/policy", {"concurrency": 1})
            api.post(JOBS, [{"name": "capped"}, {"name": "capped"}])
            copies = _copies(monkeypatch)
            for _ in range(2):
                [job] = api.post(f"{JOBS}:claim", {"count": 1, "names": ["capped"]}).body["jobs"]
                assert api.post(f"{JOBS}:claim", {"count": 1, "names": ["capped"]}).body["jobs"] == []
                api.post(f"{JOBS}:report", {"id": job["id"], "attempt": job["attempt"], "complete": {}})
        finally:
            install(None)
    assert copies["table"] == 0
    # Two claims, two refused claims, two finishes: each transaction writes two items.
    assert copies["item"] <= 12, copies
