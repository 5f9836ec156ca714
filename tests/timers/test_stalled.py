"""At most once: an AT_MOST_ONCE job is never handed out again once an attempt may have
started. A lease that ends without a report stalls it (STALLED, final), however the
clock's ticks come; only the worker's own word (a reported failure, a release) puts it back."""

from __future__ import annotations

import pytest

from shared.clock import ManualClock
from shared.job import AT_LEAST_ONCE, Job, JobStatus, Retention
from shared.jobs import claim as claiming
from shared.machine import expire
from shared.runtime import Runtime
from shared.store import keys
from shared.store.dynamo import ConditionFailed
from tests.support import Api, Background
from tests.timers.conftest import Receiver

SPACE = "once"
JOBS = f"/v1/spaces/{SPACE}/jobs"


def at_most_once(api: Api, **fields: object) -> str:
    return str(
        api.post(JOBS, {"name": "charge", "guarantee": "AT_MOST_ONCE", "backoffMs": 0, **fields}).body["id"]
    )


def claim(api: Api, **body: object) -> list[dict]:
    return list(api.post(f"{JOBS}:claim", {"count": 10, **body}).body["jobs"])


def job(api: Api, job_id: str) -> dict:
    return dict(api.get(f"{JOBS}/{job_id}").body)


def test_the_guarantee_is_shown_and_kept_on_the_item_only_when_at_most_once(api: Api, rt: Runtime) -> None:
    once = at_most_once(api)
    usual = api.post(JOBS, {"name": "charge"}).body["id"]
    assert job(api, once)["guarantee"] == "AT_MOST_ONCE"
    assert job(api, usual)["guarantee"] == "AT_LEAST_ONCE"
    assert rt.db.get(keys.job(SPACE, once))["guarantee"] == "AT_MOST_ONCE"
    assert "guarantee" not in rt.db.get(keys.job(SPACE, usual)), "the default costs no bytes on the item"
    [held_once, held_usual] = claim(api)
    assert held_once["guarantee"] == "AT_MOST_ONCE" and "guarantee" not in held_usual


def test_a_bad_guarantee_is_refused_naming_the_field(api: Api) -> None:
    answer = api.post(JOBS, [{"name": "charge"}, {"name": "charge", "guarantee": "EXACTLY_ONCE"}])
    assert answer.status == 400 and "jobs[1].guarantee" in answer.body["message"], answer.body


def test_a_lease_that_ends_stalls_the_job_whatever_attempts_are_left(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = at_most_once(api, maxAttempts=5)
    [held] = claim(api, leaseMs=10_000)
    clock.advance(10_000)
    bg.tick()
    stalled = job(api, job_id)
    assert (stalled["status"], stalled["error"], stalled["attempt"]) == ("STALLED", "lease expired", 1)
    assert stalled["finishedAtMs"] == clock.now_ms() and "leaseUntilMs" not in stalled
    assert [(a["endedAtMs"], a["outcome"]) for a in stalled["attempts"]] == [(clock.now_ms(), "EXPIRED")]
    clock.advance(3_600_000)
    bg.tick()
    assert claim(api) == [], "never handed out again"
    late = api.post(f"{JOBS}:report", {"id": job_id, "attempt": held["attempt"], "complete": {"result": 1}})
    assert late.body["outcomes"][0]["rejection"]["reason"] == "ALREADY_FINISHED"
    assert job(api, job_id)["status"] == "STALLED", "finished jobs never change"


def test_a_clock_tick_delivered_twice_stalls_the_job_once(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same tick twice (the lease book's bucket still there the second time), then a late
    one: one stall, one counted failure, never a retry."""
    monkeypatch.setattr(rt.leases, "remove", lambda buckets: None)
    job_id = at_most_once(api, maxAttempts=3)
    claim(api, leaseMs=1_000)
    clock.advance(1_000)
    reports = [bg.tick(), bg.tick()]
    clock.advance(60_000)
    reports.append(bg.tick())
    assert [r["expired"] for r in reports] == [1, 0, 0]
    stalled = job(api, job_id)
    assert (stalled["status"], stalled["failures"], stalled["attempt"]) == ("STALLED", 1, 1)
    assert claim(api) == []


def test_a_claim_whose_answer_was_lost_stalls_its_job_and_no_claim_hands_it_out_meanwhile(
    rt: Runtime, api: Api, bg: Background, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim's write happened, its answer never reached the worker (the function died
    after the write): the job may have started as far as emit knows."""
    job_id = at_most_once(api, maxAttempts=4, timeoutMs=30_000)

    def died_after_the_write(*args: object, **kw: object) -> object:
        raise RuntimeError("the claim's function died before answering")

    monkeypatch.setattr(claiming, "_answer", died_after_the_write)
    lost = api.post(f"{JOBS}:claim", {"count": 1})
    assert lost.status == 500
    monkeypatch.undo()
    assert job(api, job_id)["status"] == "RUNNING"
    for _ in range(3):
        clock.advance(10_000)
        bg.tick()
        assert claim(api) == [], "held by the lost claim until its lease ends"
    stalled = job(api, job_id)
    assert (stalled["status"], stalled["attempt"]) == ("STALLED", 1)
    clock.advance(600_000)
    bg.tick()
    assert claim(api) == []


def test_a_reported_failure_retries_and_a_release_gives_it_back_as_usual(
    api: Api, clock: ManualClock
) -> None:
    job_id = at_most_once(api, maxAttempts=2)
    [first] = claim(api)
    failed = api.post(
        f"{JOBS}:report", {"id": job_id, "attempt": first["attempt"], "fail": {"error": "declined"}}
    )
    assert failed.body["outcomes"][0]["status"] == "PENDING", "the worker knows it failed: a retry is safe"
    [second] = claim(api)
    released = api.post(f"{JOBS}:report", {"id": job_id, "attempt": second["attempt"], "release": {}})
    assert released.body["outcomes"][0]["status"] == "PENDING"
    [third] = claim(api)
    assert third["attempt"] == 3
    api.post(f"{JOBS}:report", {"id": job_id, "attempt": third["attempt"], "fail": {"error": "declined"}})
    assert job(api, job_id)["status"] == "FAILED", "out of attempts (the release gave one back)"


def test_an_at_least_once_job_still_retries_when_its_lease_ends(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    job_id = api.post(JOBS, {"name": "charge", "backoffMs": 0}).body["id"]
    claim(api, leaseMs=1_000)
    clock.advance(1_000)
    bg.tick()
    assert job(api, job_id)["status"] == "PENDING"


def test_the_stored_guarantee_decides_not_the_read_that_chose_the_transition(
    rt: Runtime, api: Api, clock: ManualClock
) -> None:
    """An expiry decided on a copy that says AT_LEAST_ONCE cannot retry an AT_MOST_ONCE job."""
    job_id = at_most_once(api)
    claim(api, leaseMs=1_000)
    clock.advance(1_000)
    item = rt.db.get(keys.job(SPACE, job_id))
    wrong: Job = rt.jobs.load(SPACE, {k: v for k, v in item.items() if k != "guarantee"}, bodies=False)
    assert wrong.guarantee == AT_LEAST_ONCE
    retention = Retention(completed_ms=1, failed_ms=1)
    retry = expire(wrong, now_ms=clock.now_ms(), rand=0.0, retention=retention, aging_ms=60_000)
    assert retry.to == JobStatus.PENDING
    with pytest.raises(ConditionFailed):
        rt.jobs.apply(SPACE, job_id, retry, held=item)
    assert job(api, job_id)["status"] == "RUNNING"


def test_stalled_jobs_are_listed_called_back_and_kept_for_the_failed_retention(
    api: Api, bg: Background, clock: ManualClock, receiver: Receiver
) -> None:
    api.patch(f"/v1/spaces/{SPACE}", {"completedRetentionMs": 60_000, "failedRetentionMs": 600_000})
    job_id = at_most_once(api, callback={"url": "https://example.com/hook"})
    api.post(JOBS, {"name": "other"})
    claim(api, leaseMs=1_000, names=["charge"])
    clock.advance(1_000)
    bg.tick()
    bg.stream()
    [body] = receiver.bodies()
    assert (body["jobId"], body["status"], body["result"]) == (job_id, "stalled", "lease expired")
    listed = api.get(JOBS, query={"status": "STALLED"}).body["jobs"]
    assert [j["id"] for j in listed] == [job_id]
    clock.advance(60_000)
    bg.expire_ttl()
    assert job(api, job_id)["status"] == "STALLED", "kept past the completed retention"
    clock.advance(540_000)
    assert api.get(f"{JOBS}/{job_id}").status == 404, "gone after the failed retention"


def test_a_stalled_job_is_retried_once_as_at_most_once_whatever_its_names_defaults_say(
    api: Api, bg: Background, clock: ManualClock
) -> None:
    """A person may know a stalled job is safe to run again: `jobs:retry` makes one new job,
    at most once like its old one (the name's defaults, changed since, do not apply)."""
    job_id = at_most_once(api, maxAttempts=5)
    claim(api, leaseMs=10_000)
    clock.advance(10_000)
    bg.tick()
    api.patch(
        f"/v1/spaces/{SPACE}", {"jobDefaults": {"charge": {"guarantee": "AT_LEAST_ONCE", "priority": 9}}}
    )
    first, again = (api.post(f"{JOBS}:retry", [job_id]).body["outcomes"] for _ in range(2))
    assert first[0]["outcome"] == "NEW" and again == [{**first[0], "outcome": "DUPLICATE"}]
    new = job(api, first[0]["id"])
    assert (new["guarantee"], new["priority"], new["retryOf"]) == ("AT_MOST_ONCE", 0, job_id)


def test_a_names_defaults_may_make_its_jobs_at_most_once(api: Api) -> None:
    api.patch(f"/v1/spaces/{SPACE}", {"jobDefaults": {"charge": {"guarantee": "AT_MOST_ONCE"}}})
    assert job(api, api.post(JOBS, {"name": "charge"}).body["id"])["guarantee"] == "AT_MOST_ONCE"
    sent = api.post(JOBS, {"name": "charge", "guarantee": "AT_LEAST_ONCE"}).body["id"]
    assert job(api, sent)["guarantee"] == "AT_LEAST_ONCE", "what the creator sends wins"
