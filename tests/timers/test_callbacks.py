"""Callbacks: delivered from the stream, retried by the clock, signed, safe to repeat."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from shared import callbacks, limits
from shared.clock import ManualClock
from shared.machine import CALLBACK_GRACE_MS
from shared.runtime import Runtime
from shared.store import keys
from shared.store.timers import CALLBACK, UNCLAIMED
from shared.targets import TargetPolicy
from tests.support import PATIENCE_S, Api, Background
from tests.timers.conftest import SECRET, DripServer, Receiver, verify

JOBS = "/v1/spaces/hooks/jobs"
HOOK = "https://api.example.com/webhooks/emit"


def finish(api: Api, how: dict, url: str = HOOK, **job: object) -> str:
    job_id = api.post(
        JOBS, {"name": "render", "callback": {"url": url, "headers": {"x-tenant": "acme"}}, **job}
    ).body["id"]
    if how == {"cancel": True}:
        api.post(f"{JOBS}:cancel", [job_id])
    else:
        [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
        api.post(f"{JOBS}:report", {"id": job_id, "attempt": held["attempt"], **how})
    return str(job_id)


def delivery(api: Api, job_id: str) -> dict:
    return dict(api.get(f"{JOBS}/{job_id}").body["callback"]["delivery"])


@pytest.fixture(autouse=True)
def secret(api: Api) -> None:
    api.patch("/v1/spaces/hooks", {"webhookSecret": SECRET})


def test_a_completed_job_calls_back_signed_with_its_headers(
    api: Api, bg: Background, receiver: Receiver, clock: ManualClock
) -> None:
    job_id = finish(api, {"complete": {"result": {"url": "https://files.example.com/rep_881.pdf"}}})
    assert delivery(api, job_id)["state"] == "PENDING"
    bg.stream()
    [call] = receiver.calls
    assert call.method == "POST" and str(call.url) == HOOK and call.headers["x-tenant"] == "acme"
    assert verify(SECRET, call.headers["Emit-Signature"], call.content) == clock.now_ms()
    assert receiver.bodies() == [
        {
            "jobId": job_id,
            "space": "hooks",
            "name": "render",
            "status": "completed",
            "attempt": 1,
            "timestamp": clock.now_ms(),
            "result": {"url": "https://files.example.com/rep_881.pdf"},
        }
    ]
    shown = delivery(api, job_id)
    assert (shown["state"], shown["attempts"], shown["lastStatus"]) == ("DELIVERED", 1, 204)


@pytest.mark.parametrize(
    ("how", "status", "result"),
    [
        ({"fail": {"error": "card declined", "unrecoverable": True}}, "failed", "card declined"),
        ({"cancel": True}, "cancelled", None),
    ],
)
def test_failed_and_cancelled_jobs_call_back_too(
    api: Api, bg: Background, receiver: Receiver, how: dict, status: str, result: object
) -> None:
    finish(api, how)
    bg.stream()
    [body] = receiver.bodies()
    assert (body["status"], body["result"]) == (status, result)


def test_a_failing_receiver_is_tried_again_after_5_s_then_doubling(
    api: Api, bg: Background, receiver: Receiver, clock: ManualClock
) -> None:
    receiver.answers = [500, httpx.ConnectTimeout("no answer"), 204]
    job_id = finish(api, {"complete": {}})
    bg.stream()
    assert delivery(api, job_id)["state"] == "PENDING" and delivery(api, job_id)["lastStatus"] == 500
    clock.advance(4_999)
    bg.tick()
    assert len(receiver.calls) == 1
    clock.advance(1)
    bg.tick()
    assert len(receiver.calls) == 2
    assert delivery(api, job_id)["lastError"].startswith("ConnectTimeout")
    clock.advance(9_999)
    bg.tick()
    assert len(receiver.calls) == 2
    clock.advance(1)
    bg.tick()
    assert len(receiver.calls) == 3 and delivery(api, job_id)["state"] == "DELIVERED"
    assert len({c.content for c in receiver.calls}) == 1, "every try sends the same body"


def test_it_gives_up_after_about_a_day(
    api: Api, bg: Background, receiver: Receiver, clock: ManualClock
) -> None:
    receiver.answers = [503] * 100
    job_id = finish(api, {"complete": {}})
    bg.stream()
    for _ in range(60):
        clock.advance(3_600_000)
        bg.tick()
        if delivery(api, job_id)["state"] != "PENDING":
            break
    shown = delivery(api, job_id)
    assert shown["state"] == "GAVE_UP"
    assert 15 <= shown["attempts"] <= 40, "5 s doubling to an hour apart, for about a day"
    calls = len(receiver.calls)
    clock.advance(3_600_000)
    bg.tick()
    assert len(receiver.calls) == calls


def test_duplicate_and_reordered_stream_records_send_one_callback(
    api: Api, bg: Background, receiver: Receiver
) -> None:
    finish(api, {"complete": {}})
    records = bg.records()
    bg.stream(records)
    bg.stream(records)
    bg.stream(list(reversed(records)))
    bg.tick()
    assert len(receiver.calls) == 1


def test_no_signature_without_a_secret(api: Api, bg: Background, receiver: Receiver) -> None:
    api.patch("/v1/spaces/hooks", {"webhookSecret": None})
    finish(api, {"complete": {}})
    bg.stream()
    assert "Emit-Signature" not in receiver.calls[0].headers


def test_internal_targets_are_refused_on_aws(rt: Runtime, api: Api) -> None:
    rt.context = dataclasses.replace(rt.context, targets=TargetPolicy(allow_private=False))
    for url in (
        "http://127.0.0.1:8080/x",
        "http://169.254.169.254/latest",
        "http://10.1.2.3/",
        "http://localhost/",
    ):
        answer = api.post(JOBS, {"name": "n", "callback": {"url": url}})
        assert answer.status == 400, url
        assert (
            answer.body["message"]
            == "callback.url: may not be a loopback, private, link-local or metadata address"
        )
    assert api.post(JOBS, {"name": "n", "callback": {"url": HOOK}}).status == 200


@pytest.mark.parametrize(
    "url", ["http://127.1/", "http://0x7f000001/", "http://localhost./", "https://[64:ff9b::a9fe:a9fe]/"]
)
def test_other_spellings_of_internal_addresses_are_refused_at_create(rt: Runtime, api: Api, url: str) -> None:
    rt.context = dataclasses.replace(rt.context, targets=TargetPolicy(allow_private=False))
    answer = api.post(JOBS, {"name": "n", "callback": {"url": url}})
    assert answer.status == 400, url
    assert answer.body["message"].startswith("callback.url: may not be a loopback")
    batch = api.post(JOBS, [{"name": "n"}, {"name": "n", "callback": {"url": url}}])
    assert batch.status == 400 and batch.body["message"].startswith("jobs[1].callback.url: ")


def test_a_name_that_resolves_to_an_internal_address_is_refused_when_sent(
    rt: Runtime, api: Api, bg: Background, receiver: Receiver
) -> None:
    policy = TargetPolicy(allow_private=False, resolve=lambda host: ["10.0.0.7"])
    rt.context = dataclasses.replace(rt.context, targets=policy)
    rt.dispatcher.policy = policy
    job_id = finish(api, {"complete": {}})
    bg.stream()
    assert receiver.calls == []
    assert "resolves to 10.0.0.7" in delivery(api, job_id)["lastError"]


def test_the_stream_keeps_flowing_after_a_cancelled_transaction(
    api: Api, bg: Background, receiver: Receiver
) -> None:
    """A repeated keyed create is a cancelled transaction; the embedded DynamoDB must go on
    streaming afterwards, and record nothing of the write that was cancelled."""
    keyed = "/v1/spaces/keyed/jobs"
    api.post(keyed, {"name": "n", "key": "once"})
    bg.stream()  # emit dev reads the stream all along, before the cancelled transaction too
    assert api.post(keyed, {"name": "n", "key": "once"}).body["outcome"] == "DUPLICATE"
    after = bg.records()
    assert not [r for r in after if r["dynamodb"]["Keys"]["pk"]["S"].startswith("J#")], "nothing was written"
    finish(api, {"complete": {}})
    bg.stream()
    assert len(receiver.calls) == 1


def test_on_aws_a_callback_goes_to_the_address_that_was_checked(
    rt: Runtime, api: Api, bg: Background, receiver: Receiver
) -> None:
    """A name checked once and resolved again by the HTTP client could lead elsewhere (DNS
    rebinding); the request goes to the checked address, with the original Host and TLS name."""
    policy = TargetPolicy(allow_private=False, resolve=lambda host: ["93.184.216.34"])
    rt.context = dataclasses.replace(rt.context, targets=policy)
    rt.dispatcher.policy = policy
    finish(api, {"complete": {}})
    bg.stream()
    [call] = receiver.calls
    assert call.url.host == "93.184.216.34" and call.url.path == "/webhooks/emit"
    assert call.headers["host"] == "api.example.com"
    assert call.extensions["sni_hostname"] == "api.example.com"


def test_the_first_try_uses_the_finished_job_from_the_stream_record(
    rt: Runtime, api: Api, bg: Background, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record that finished the job carries it, and a finished job never changes: no read."""
    finish(api, {"complete": {"result": {"ok": True}}})

    def no_reads(*args: object) -> None:
        raise AssertionError("the job item was read again")

    monkeypatch.setattr(rt.jobs, "get_item", no_reads)
    bg.stream()
    assert receiver.bodies()[0]["result"] == {"ok": True}


def test_records_carry_binary_values_in_base64_as_lambda_hands_them_over(
    api: Api, bg: Background, receiver: Receiver
) -> None:
    """Lambda's event carries a binary attribute (a compressed payload or result in the job
    item) as a base64 string, not bytes: the stream must read it either way."""
    result = {"pages": ["rendered"] * 100}  # over the item's room for a result, tiny compressed
    finish(api, {"complete": {"result": result}}, payload={"pages": ["page"] * 200})
    records = bg.records()
    images = [
        r["dynamodb"].get("NewImage") or {}
        for r in records
        if r["dynamodb"]["Keys"]["pk"]["S"].startswith("J#")
    ]
    assert isinstance(images[-1]["resultZ"]["B"], str) and isinstance(images[-1]["payloadZ"]["B"], str)
    bg.stream(records)
    assert [body["result"] for body in receiver.bodies()] == [result]


def test_a_receiver_that_drips_its_answer_is_abandoned_at_the_deadline(
    api: Api, rt: Runtime, bg: Background, clock: ManualClock, drip: DripServer
) -> None:
    """A per-read timeout never ends a send whose answer comes a byte at a time; the total
    deadline does, well inside the attempt's hold, so no second send of it can start."""
    rt.dispatcher.send_deadline_s = 2.0  # the quick send's room too, on a busy machine
    slow = finish(api, {"complete": {}}, url=drip.url("/drip"))
    fast = finish(api, {"complete": {}}, url=drip.url("/ok"))
    first = threading.Thread(target=bg.stream, daemon=True)
    first.start()
    first.join(timeout=PATIENCE_S)  # 2 s, with room for a busy machine
    assert not first.is_alive(), "the dripping send outlived its deadline"
    shown = delivery(api, slow)
    assert (shown["state"], shown["attempts"], shown["lastError"]) == ("PENDING", 1, "no answer within 2 s")
    assert delivery(api, fast)["state"] == "DELIVERED", "sent alongside, not held up"
    clock.advance(4_999)
    bg.tick()
    assert drip.paths.count("/drip") == 1
    clock.advance(1)
    bg.tick()
    assert drip.paths.count("/drip") == 2 and delivery(api, slow)["attempts"] == 2


def test_a_finish_record_replayed_after_its_job_was_removed_sends_nothing(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, receiver: Receiver
) -> None:
    """A tombstone takes the delivery's place when retention removes the job: a replay of
    the record that finished it (a retried batch, within the stream's 24 h) starts nothing."""
    api.patch("/v1/spaces/hooks", {"completedRetentionMs": 60_000})
    job_id = finish(api, {"complete": {}})
    finished = bg.stream()
    assert len(receiver.calls) == 1
    clock.advance(60_000)
    assert bg.expire_ttl() == 1
    bg.stream()  # the job's REMOVE
    bg.stream(finished)
    bg.tick()
    assert len(receiver.calls) == 1
    tombstone = rt.db.get(keys.delivery("hooks", job_id))
    assert tombstone is not None and tombstone["state"] == "REMOVED" and "gsk" not in tombstone
    clock.advance(limits.DAY_MS)
    bg.expire_ttl()
    bg.stream(finished)
    assert len(receiver.calls) == 1 and rt.db.get(keys.delivery("hooks", job_id)) is not None
    clock.advance(limits.DAY_MS)
    bg.expire_ttl()
    assert rt.db.get(keys.delivery("hooks", job_id)) is None, "the tombstone goes once no record can come"


class Faulty:
    """The table's client, failing the calls `breaks` picks while `on`."""

    def __init__(self, inner: Any, breaks: Callable[[str, dict[str, Any]], bool]) -> None:
        self.inner, self.breaks, self.on = inner, breaks, True

    def __getattr__(self, name: str) -> Any:
        call = getattr(self.inner, name)

        def faulty(**params: Any) -> Any:
            if self.on and self.breaks(name, params):
                raise ClientError({"Error": {"Code": "InternalServerError", "Message": "injected"}}, name)
            return call(**params)

        return faulty


def delivery_write(call: str, params: dict[str, Any]) -> bool:
    return call == "put_item" and params["Item"]["pk"]["S"].startswith("C#")


def timers_in_book(rt: Runtime, kind: str = CALLBACK) -> list[Any]:
    """The timers of `kind` filed in the timer book, of every slot."""
    rows = rt.db.client.scan(TableName=rt.db.table)["Items"]
    buckets = [r for r in rows if r["pk"]["S"].startswith(keys.TIMER_PREFIX)]
    return [t for b in buckets for t in json.loads(b["jobs"]["S"]) if t[0] == kind]


@pytest.mark.parametrize(
    "how", [{"complete": {}}, {"fail": {"error": "boom", "unrecoverable": True}}, {"cancel": True}]
)
def test_a_delivery_the_stream_never_recorded_is_made_by_the_clock_once(
    rt: Runtime,
    api: Api,
    bg: Background,
    clock: ManualClock,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    how: dict,
) -> None:
    """The write that finishes a job with a callback files it for the clock first, a grace
    later; the stream records the delivery long before. Fail that record through every
    retry of the stream's record, and the clock still delivers, exactly once."""
    faulty = Faulty(rt.db.client, delivery_write)
    monkeypatch.setattr(rt.db, "client", faulty)
    job_id = finish(api, how)
    bg.stream()  # the finishing record fails three times, and is dropped
    faulty.on = False
    assert receiver.calls == []
    clock.advance(CALLBACK_GRACE_MS - 1)
    bg.tick()
    assert receiver.calls == [], "the clock waits out the stream's grace"
    clock.advance(1)
    bg.tick()
    assert len(receiver.calls) == 1 and receiver.bodies()[0]["jobId"] == job_id
    shown = delivery(api, job_id)
    assert (shown["state"], shown["attempts"]) == ("DELIVERED", 1)
    for _ in range(3):
        clock.advance(CALLBACK_GRACE_MS + callbacks.HOLD_MS)
        bg.tick()
    assert len(receiver.calls) == 1
    assert timers_in_book(rt) == [], "nothing left for the clock"


def test_a_delivery_the_stream_recorded_is_not_made_again_by_the_clock(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, receiver: Receiver
) -> None:
    job_id = finish(api, {"complete": {}})
    bg.stream()
    assert len(receiver.calls) == 1 and delivery(api, job_id)["state"] == "DELIVERED"
    for _ in range(3):
        clock.advance(CALLBACK_GRACE_MS)
        bg.tick()
    assert len(receiver.calls) == 1
    assert timers_in_book(rt) == [], "the finishing write's check found it delivered"


def test_a_sender_that_dies_mid_attempt_is_handed_the_delivery_again(
    rt: Runtime,
    api: Api,
    bg: Background,
    clock: ManualClock,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sender holds an attempt, then dies before recording it: the clock hands the
    delivery over again once the hold has run out, and it is made once."""
    monkeypatch.setattr(rt.dispatcher, "_record", lambda *_: (_ for _ in ()).throw(SystemExit()))
    job_id = finish(api, {"complete": {}})
    with pytest.raises(SystemExit):
        bg.stream()
    assert len(receiver.calls) == 1 and delivery(api, job_id)["state"] == "PENDING"
    monkeypatch.undo()
    clock.advance(CALLBACK_GRACE_MS)
    bg.tick()  # the finishing write's check: still held by the dead sender
    assert len(receiver.calls) == 1
    clock.advance(callbacks.HOLD_MS + limits.MINUTE_MS)
    bg.tick()
    assert len(receiver.calls) == 2 and delivery(api, job_id)["state"] == "DELIVERED"
    for _ in range(3):
        clock.advance(callbacks.HOLD_MS + limits.MINUTE_MS)
        bg.tick()
    assert len(receiver.calls) == 2


def test_pending_deliveries_of_every_space_are_retried_when_due(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, receiver: Receiver
) -> None:
    """A try put off is filed by its sender in the timer book, at its time: the clock
    hands it over then, whatever the space."""
    receiver.answers = [500] * 21 + [204] * 21
    ids = [finish(api, {"complete": {}}) for _ in range(20)]
    other = api.post("/v1/spaces/other/jobs", {"name": "n", "callback": {"url": HOOK}}).body["id"]
    [held] = api.post("/v1/spaces/other/jobs:claim", {"count": 1}).body["jobs"]
    api.post("/v1/spaces/other/jobs:report", {"id": other, "attempt": held["attempt"], "complete": {}})
    bg.stream()
    assert len(receiver.calls) == 21
    clock.advance(5_000 - 1)
    bg.tick()
    assert len(receiver.calls) == 21, "not before its time"
    clock.advance(1)
    bg.tick()
    assert len(receiver.calls) == 42
    assert {delivery(api, job_id)["state"] for job_id in [*ids]} == {"DELIVERED"}
    assert api.get(f"/v1/spaces/other/jobs/{other}").body["callback"]["delivery"]["state"] == "DELIVERED"


def test_a_job_without_a_callback_files_nothing_for_the_clock(rt: Runtime, api: Api, bg: Background) -> None:
    api.patch("/v1/spaces/plain", {"unclaimedMs": None})
    job_id = api.post("/v1/spaces/plain/jobs", {"name": "n"}).body["id"]
    [held] = api.post("/v1/spaces/plain/jobs:claim", {"count": 1}).body["jobs"]
    api.post("/v1/spaces/plain/jobs:report", {"id": job_id, "attempt": held["attempt"], "complete": {}})
    bg.stream()
    assert timers_in_book(rt) == [] and timers_in_book(rt, UNCLAIMED) == []
