"""Each attempt's start, end and error, as GET /v1/spaces/{space}/jobs/{id} shows them."""

from __future__ import annotations

from typing import Any

from shared.clock import ManualClock
from shared.job import ATTEMPT_ERROR_CHARS, ATTEMPTS_KEPT
from tests.support import Api

JOBS = "/v1/spaces/tries/jobs"


def create(api: Api, **job: Any) -> str:
    return str(api.post(JOBS, {"name": "n", "backoffMs": 0, **job}).body["id"])


def claim(api: Api) -> dict[str, Any]:
    [held] = api.post(f"{JOBS}:claim", {"count": 1}).body["jobs"]
    return dict(held)


def report(api: Api, held: dict[str, Any], **parts: Any) -> None:
    answer = api.post(f"{JOBS}:report", {"id": held["id"], "attempt": held["attempt"], **parts})
    assert "rejection" not in answer.body["outcomes"][0], answer


def attempts(api: Api, job_id: str) -> list[dict[str, Any]]:
    return list(api.get(f"{JOBS}/{job_id}").body["attempts"])


def test_each_attempt_shows_when_it_ran_and_how_it_ended(api: Api, clock: ManualClock) -> None:
    job_id = create(api)
    assert attempts(api, job_id) == [], "nothing handed out yet"
    started = clock.now_ms()
    held = claim(api)
    assert attempts(api, job_id) == [
        {"attempt": 1, "startedAtMs": started, "endedAtMs": None, "outcome": None}
    ]
    clock.advance(1_500)
    long_error = "SMTP server timed out " + "x" * 500
    report(api, held, fail={"error": long_error})
    assert api.get(f"{JOBS}/{job_id}").body["error"] == long_error, "the job's own error is whole"
    clock.advance(10)
    held = claim(api)
    clock.advance(20)
    report(api, held, release={})
    held = claim(api)
    clock.advance(30)
    report(api, held, complete={"result": 1})
    shown = attempts(api, job_id)
    assert shown == [
        {
            "attempt": 1,
            "startedAtMs": started,
            "endedAtMs": started + 1_500,
            "outcome": "FAILED",
            "error": long_error[:ATTEMPT_ERROR_CHARS],
        },
        {"attempt": 2, "startedAtMs": started + 1_510, "endedAtMs": started + 1_530, "outcome": "RELEASED"},
        {"attempt": 3, "startedAtMs": started + 1_530, "endedAtMs": started + 1_560, "outcome": "COMPLETED"},
    ]


def test_a_cancel_ends_the_running_attempt_and_no_other(api: Api, clock: ManualClock) -> None:
    running = create(api)
    claim(api)
    clock.advance(400)
    assert api.post(f"{JOBS}:cancel", {"ids": [running]}).status == 200
    [ended] = attempts(api, running)
    assert (ended["endedAtMs"], ended["outcome"]) == (clock.now_ms(), "CANCELLED")

    waiting = create(api, maxAttempts=3)
    report(api, claim(api), fail={"error": "boom"})
    clock.advance(100)
    api.post(f"{JOBS}:cancel", {"ids": [waiting]})
    assert [a["outcome"] for a in attempts(api, waiting)] == ["FAILED"], "cancelled while pending"


def test_a_job_keeps_its_last_attempts(api: Api) -> None:
    tries = ATTEMPTS_KEPT + 2
    job_id = create(api, maxAttempts=tries)
    for n in range(tries):
        report(api, claim(api), fail={"error": f"try {n + 1}"})
    shown = attempts(api, job_id)
    assert [a["attempt"] for a in shown] == list(range(3, tries + 1)), "oldest first, the first two gone"
    assert [a["error"] for a in shown] == [f"try {n}" for n in range(3, tries + 1)]
    assert api.get(f"{JOBS}/{job_id}").body["status"] == "FAILED"


def test_lists_leave_the_attempts_out(api: Api) -> None:
    create(api)
    claim(api)
    [listed] = api.get(JOBS).body["jobs"]
    assert "attempts" not in listed
