"""Follow links: made with a read token, followed with none, from any origin."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from devserver import gateway
from shared import limits
from shared.clock import ManualClock
from shared.config import Config
from shared.jobs import report as reporting
from shared.jobs.follow import SECRET
from shared.runtime import Runtime
from shared.schema import reports_in
from shared.store import keys
from shared.store.secrets import ServiceSecrets
from tests.conftest import mint
from tests.support import Answer, Api, check_answer

SPACE = "/v1/spaces/watch"
JOBS = f"{SPACE}/jobs"
FOLLOWED = {"id", "name", "status", "attempt", "progress", "createdAtMs", "finishedAtMs", "lines", "nextSeq"}


def link(api: Api, job_id: str, body: Any = None) -> dict[str, Any]:
    answer = api.post(f"{JOBS}/{job_id}/follow-links", body)
    assert answer.status == 201, answer
    return dict(answer.body)


def follow(api: Api, token: str, **query: Any) -> Answer:
    return api.get(f"/v1/follow/{token}", token=None, query=query)


def claim(api: Api) -> int:
    (held,) = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    return int(held["attempt"])


def report(api: Api, job_id: str, **fields: Any) -> None:
    answer = api.post(f"{JOBS}:report", {"id": job_id, "attempt": 1, **fields})
    assert "status" in answer.body["outcomes"][0], answer


def test_a_link_follows_the_job_without_a_token_and_shows_nothing_else(api: Api, clock: ManualClock) -> None:
    job_id = api.created(
        "/v1/spaces/watch",
        "render",
        payload={"secret": "payload"},
        key="k-1",
        callback={"url": "https://example.com/hook", "headers": {"X-Key": "shh"}},
    )
    made = link(api, job_id)  # no body: a day
    assert made["expiresAtMs"] == clock.now_ms() + limits.DAY_MS
    assert made["url"] == f"http://localhost/v1/follow/{made['token']}"
    first = follow(api, made["token"])
    assert first.status == 200
    assert set(first.body) == FOLLOWED | {"version"}
    assert first.body | {"version": "-"} == {
        "id": job_id,
        "name": "render",
        "status": "PENDING",
        "attempt": 0,
        "progress": None,
        "createdAtMs": clock.now_ms(),
        "finishedAtMs": None,
        "lines": [],
        "nextSeq": 0,
        "version": "-",
    }
    assert "shh" not in json.dumps(first.body) and "payload" not in json.dumps(first.body)

    claim(api)
    lines = [{"level": "INFO", "message": f"step {n}"} for n in range(150)]
    report(api, job_id, progress={"percent": 40, "message": "rendering"}, lines=lines, event={"e": 1})
    running = follow(api, made["token"]).body
    assert running["status"] == "RUNNING" and running["attempt"] == 1
    assert running["progress"] == {"percent": 40, "message": "rendering"}
    assert [line["message"] for line in running["lines"]] == [f"step {n}" for n in range(100)]
    assert running["nextSeq"] == 100 and running["version"] != first.body["version"]
    rest = follow(api, made["token"], afterSeq=running["nextSeq"]).body
    assert [line["seq"] for line in rest["lines"]] == list(range(100, 150)) and rest["nextSeq"] == 150
    assert follow(api, made["token"], afterSeq=150).body["lines"] == []

    clock.advance(1_000)
    report(api, job_id, complete={"result": {"frames": 240}})
    done = follow(api, made["token"], afterSeq=150).body
    assert (done["status"], done["result"], done["finishedAtMs"]) == (
        "COMPLETED",
        {"frames": 240},
        clock.now_ms(),
    )
    assert "error" not in done


def test_a_failed_job_shows_its_error_and_a_cancelled_one_neither(api: Api) -> None:
    failing = api.created(SPACE, "f", maxAttempts=1)
    token = link(api, failing)["token"]
    claim(api)
    report(api, failing, fail={"error": "disk full"})
    failed = follow(api, token).body
    assert (failed["status"], failed["error"]) == ("FAILED", "disk full") and "result" not in failed
    cancelled = api.created(SPACE, "c")
    api.post(f"{JOBS}:cancel", [cancelled])
    shown = follow(api, link(api, cancelled)["token"]).body
    assert shown["status"] == "CANCELLED" and not {"error", "result"} & set(shown)


def test_a_forged_altered_or_expired_link_is_401_and_opens_no_other_job(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    mine, other = api.created(SPACE, "a"), api.created(SPACE, "b")
    token = link(api, mine, {"ttlMs": 60_000})["token"]
    fmt, space, job_id, expires, mac = token.split(".")
    elsewhere = api.created("/v1/spaces/other", "a")
    tampered = [
        f"{fmt}.{space}.{other}.{expires}.{mac}",  # another job
        f"{fmt}.other.{elsewhere}.{expires}.{mac}",  # another space's job
        f"{fmt}.{space}.{job_id}.{int(expires) + limits.DAY_MS}.{mac}",  # a longer life
        f"{fmt}.{space}.{job_id}.{expires}.{mac[:-2]}AA",  # another mac
        f"{fmt}.{space}.{job_id}.{expires}.{link(api, other)['token'].split('.')[4]}",  # another's mac
        f"v2.{space}.{job_id}.{expires}.{mac}",
        token + ".x",
        "x",
    ]
    for forged in tampered:
        answer = follow(api, forged)
        assert (answer.status, answer.body["code"]) == (401, "Unauthenticated"), forged
    assert follow(api, token).status == 200
    clock.advance(60_000)
    answer = follow(api, token)
    assert (answer.status, answer.body["message"]) == (401, "token: the follow link has expired")


def test_a_link_never_made_by_this_service_is_401(api: Api) -> None:
    """No link made yet: the service has no secret, and nothing opens."""
    job_id = api.created(SPACE, "a")
    assert follow(api, f"v1.watch.{job_id}.9999999999999.{'A' * 43}").status == 401


def test_a_job_past_retention_is_404(api: Api, clock: ManualClock) -> None:
    api.patch(SPACE, {"completedRetentionMs": 60_000})
    job_id = api.created(SPACE, "a")
    token = link(api, job_id, {"ttlMs": 10 * limits.MINUTE_MS})["token"]
    claim(api)
    report(api, job_id, complete={})
    clock.advance(60_000)
    answer = follow(api, token)
    assert (answer.status, answer.body["code"]) == (404, "NotFound")


def test_making_a_link_needs_read_in_the_space_and_a_job_that_exists(api: Api, rt: Runtime) -> None:
    job_id = api.created(SPACE, "a")
    path = f"{JOBS}/{job_id}/follow-links"
    assert api.as_token(mint(rt, ["read"], ["watch"])).post(path).status == 201
    assert api.as_token(mint(rt, ["create", "work"])).post(path).status == 403
    assert api.as_token(mint(rt, ["read"], ["other"])).post(path).status == 403
    assert api.post(path, token=None).status == 401
    assert api.post(f"{JOBS}/01J00000000000000000000000/follow-links").status == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"ttlMs": 59_999}, "ttlMs: must be at least 60000"),
        ({"ttlMs": 2_592_000_001}, "ttlMs: must be at most 2592000000"),
        ({"ttlMs": "60000"}, "ttlMs: must be an integer"),
        ({"ttl": 60_000}, "ttl: is not a known field"),
    ],
)
def test_bad_link_requests_name_the_field(api: Api, body: Any, message: str) -> None:
    answer = api.post(f"{JOBS}/{api.created(SPACE, 'a')}/follow-links", body)
    assert (answer.status, answer.body["message"]) == (400, message)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"waitMs": 25_001}, "waitMs: must be an integer from 0 to 25000"),
        ({"afterSeq": -1}, "afterSeq: must be an integer from 0 to 2147483647"),
    ],
)
def test_bad_follow_queries_name_the_field(api: Api, query: dict[str, Any], message: str) -> None:
    token = link(api, api.created(SPACE, "a"))["token"]
    answer = follow(api, token, **query)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_a_wait_ends_at_waitms_when_nothing_changes_and_reads_about_once_a_second(
    api: Api, rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = api.created(SPACE, "a")
    token = link(api, job_id)["token"]
    version = follow(api, token).body["version"]
    # AWS's pauses between looks (emit dev's are shorter).
    aws = dataclasses.replace(
        rt.context.config, poll_ms=Config.default("poll_ms"), poll_max_ms=Config.default("poll_max_ms")
    )
    monkeypatch.setattr(rt, "context", dataclasses.replace(rt.context, config=aws))
    reads = []
    get = rt.db.get
    monkeypatch.setattr(rt.db, "get", lambda key, **kw: reads.append(key) or get(key, **kw))
    started = clock.now_ms()
    same = follow(api, token, waitMs=25_000, version=version)
    assert same.status == 200 and same.body["version"] == version
    assert clock.now_ms() - started == 25_000
    job_reads = [k for k in reads if k["pk"].startswith("J#")]
    assert len(job_reads) == 28, "a read a second, a few more while the pause grows: 28 a wait"
    assert follow(api, token, version=version).status == 200, "no waitMs: no wait"
    assert clock.now_ms() - started == 25_000


def test_a_wait_answers_as_soon_as_the_job_changes(api: Api, rt: Runtime, clock: ManualClock) -> None:
    job_id = api.created(SPACE, "a")
    token = link(api, job_id)["token"]
    version = follow(api, token).body["version"]
    claim(api)
    started = clock.now_ms()

    class Worker(ManualClock):
        """Sleeps as the test clock does; 3 s into the wait, the worker reports progress."""

        def sleep(self, seconds: float) -> None:
            clock.sleep(seconds)
            if clock.now_ms() - started >= 3_000 and not done:
                done.append(True)
                reports = reports_in([{"id": job_id, "attempt": 1, "progress": {"percent": 50}}])
                reporting.report(rt.context, "watch", reports)

        def now_ms(self) -> int:
            return clock.now_ms()

    done: list[bool] = []
    rt.context = dataclasses.replace(rt.context, clock=Worker())
    running = follow(api, token, version=version).body  # the claim is news already
    assert running["status"] == "RUNNING"
    changed = follow(api, token, waitMs=25_000, version=running["version"]).body
    assert changed["progress"] == {"percent": 50, "message": None}
    assert 3_000 <= clock.now_ms() - started <= 4_000, "seen within a second of the change"


def test_a_wait_begun_before_the_link_expires_ends_at_its_expiry_as_an_expired_link(
    api: Api, clock: ManualClock
) -> None:
    """A 60 s link, a 25 s wait sent at +50 s: it ends at +60 s, answered as the link is
    from then on (401, expired), never with the job after the capability has ended."""
    job_id = api.created(SPACE, "a")
    made = link(api, job_id, {"ttlMs": 60_000})
    version = follow(api, made["token"]).body["version"]
    clock.advance(50_000)
    late = follow(api, made["token"], waitMs=25_000, version=version)
    assert (late.status, late.body["message"]) == (401, "token: the follow link has expired")
    assert clock.now_ms() == made["expiresAtMs"], "the wait ended at the link's expiry, not at waitMs"
    assert follow(api, made["token"]).status == 401


def test_a_wait_answers_at_once_when_lines_are_there_already(api: Api, clock: ManualClock) -> None:
    job_id = api.created(SPACE, "a")
    token = link(api, job_id)["token"]
    claim(api)
    report(api, job_id, lines=[{"level": "INFO", "message": str(n)} for n in range(120)])
    page = follow(api, token).body
    started = clock.now_ms()
    rest = follow(api, token, afterSeq=page["nextSeq"], waitMs=25_000, version=page["version"]).body
    assert len(rest["lines"]) == 20 and clock.now_ms() == started


def _raw(method: str, path: str, headers: dict[str, str]) -> dict[str, Any]:
    matched = gateway.match(method, path)
    assert isinstance(matched, gateway.Matched)
    event = gateway.event(matched, method=method, path=path, query="", headers=headers, body=b"")
    answer = gateway.invoke(matched, event)
    body = gateway.response_body(answer)
    check_answer(
        method, matched.route.path, Answer(answer["statusCode"], answer["headers"], json.loads(body))
    )
    return answer


def test_any_origin_may_read_a_follow_answer_and_no_other_route(api: Api, admin_token: str) -> None:
    job_id = api.created(SPACE, "a")
    token = link(api, job_id)["token"]
    page = {"origin": "https://status.example.org"}
    for path, status in ((f"/v1/follow/{token}", 200), (f"/v1/follow/{token[:-1]}", 401)):
        answer = _raw("GET", path, page)
        assert answer["statusCode"] == status
        assert answer["headers"]["Access-Control-Allow-Origin"] == "*"
        assert answer["headers"]["Cache-Control"] == ("no-store" if status == 200 else "no-cache")
        assert "Access-Control-Allow-Credentials" not in answer["headers"]
    other = _raw("GET", f"{JOBS}/{job_id}", page | {"authorization": f"Bearer {admin_token}"})
    assert other["statusCode"] == 200
    assert not [h for h in other["headers"] if h.lower().startswith("access-control-")]


def test_processes_racing_to_make_the_secret_all_keep_the_winners(rt: Runtime) -> None:
    """Two cold functions make the first links at once: the one that loses the conditional
    write reads the winner's secret, so every link either makes opens everywhere."""
    first, second = ServiceSecrets(rt.db), ServiceSecrets(rt.db)
    missed = {"once": True}
    get = rt.db.get

    def late(key: dict[str, str], **kw: Any) -> Any:
        if missed.pop("once", False):
            first.get(SECRET, create=True)  # the other process writes between this read and its own
            return None
        return get(key, **kw)

    assert second.get(SECRET, create=False) is None
    second.db = type("Late", (), {"get": staticmethod(late), "put": rt.db.put})()  # type: ignore[assignment]
    assert second.get(SECRET, create=True) == first.get(SECRET, create=False) is not None


def test_lines_lost_to_a_fault_do_not_make_a_wait_spin(api: Api, rt: Runtime, clock: ManualClock) -> None:
    """A report's lines are written after its job: a fault between the two leaves the job
    counting lines that never come. A follower past the last stored line still waits."""
    job_id = api.created(SPACE, "a")
    token = link(api, job_id)["token"]
    claim(api)
    report(api, job_id, lines=[{"level": "INFO", "message": str(n)} for n in range(3)])
    rt.db.client.update_item(
        TableName=rt.table,
        Key={part: {"S": value} for part, value in keys.job("watch", job_id).items()},
        UpdateExpression="SET lineCount = :n",
        ExpressionAttributeValues={":n": {"N": "5"}},
    )
    page = follow(api, token).body
    assert page["nextSeq"] == 3
    started = clock.now_ms()
    again = follow(api, token, afterSeq=3, waitMs=25_000, version=page["version"]).body
    assert (again["lines"], again["version"]) == ([], page["version"])
    assert clock.now_ms() - started == 25_000
