"""The reporter's rules, on answers scripted here: what goes in which report, what is
sent again, and when it falls silent. (The tests against `emit dev` show the same rules
working with real answers; these reach the answers a server rarely gives.)"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from emit.errors import Unavailable
from emit.held import HeldJob
from emit.models import Outcome
from emit.reporter import Hold, Reporter
from emit.transport import Backoff

from tests.sdk.support import HandClock
from tests.support import PATIENCE_S

OK = {"status": "RUNNING"}
QUICK = Backoff(first=0.01, most=0.05)


class ScriptedJobs:
    """Answers each report request from a script: an outcome per report, or an error."""

    def __init__(self, *script: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
        self.script = list(script)
        self.sent: list[list[dict[str, Any]]] = []

    def report(self, reports: Sequence[Mapping[str, Any]]) -> list[Outcome]:
        batch = [dict(r) for r in reports]
        self.sent.append(batch)
        answer = self.script.pop(0) if self.script else (lambda b: [OK for _ in b])
        return [Outcome.from_api(o) for o in answer(batch)]


def every(outcome: dict[str, Any]) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    return lambda batch: [outcome for _ in batch]


def unreachable(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    raise Unavailable("no answer")


def rejected(reason: str) -> dict[str, Any]:
    return {"rejection": {"reason": reason, "message": f"{reason} here"}}


def hold(
    lost: list[str],
    *,
    lease: float = 60.0,
    job_id: str = "01J0000000000000000000000A",
    now: float | None = None,
) -> Hold:
    now = time.monotonic() if now is None else now
    return Hold(
        job=HeldJob(id=job_id, name="n", attempt=1, payload=None, space="s"),
        lease=lease,
        touch={},
        next_touch=now + lease / 2,
        deadline=now + lease,
        on_lost=lost.append,
    )


def direct(jobs: ScriptedJobs) -> Callable[[list[dict[str, Any]]], Awaitable[list[Outcome]]]:
    """The scripted jobs' `report`, answered on the loop at once."""

    async def send(bodies: list[dict[str, Any]]) -> list[Outcome]:
        return jobs.report(bodies)

    return send


async def until(check: Callable[[], object]) -> None:
    """Let the loop run (the reporter answers in it, `direct`ly) until `check()` holds."""
    for _ in range(100_000):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never true: {check}")


async def step(clock: HandClock, seconds: float) -> None:
    """Move the clock on, and let the reporter do what is due until it waits again."""
    mark = clock.advance(seconds)
    await until(lambda: clock.waiting_since(mark))


def report(jobs: ScriptedJobs, *holds: Hold, end: dict[str, Any] | None = None) -> None:
    """Run a reporter over `holds` until it has said everything (ending each with `end`)."""

    async def main() -> None:
        reporter = Reporter(direct(jobs), interval=0.01, backoff=QUICK)
        for h in holds:
            reporter.add(h)
            reporter.end(h, end or {"complete": {"result": "done"}})
        reporter.close()
        await asyncio.wait_for(reporter.run(), PATIENCE_S)

    asyncio.run(main())


def test_lines_and_events_go_out_in_order_and_the_ending_comes_last() -> None:
    jobs = ScriptedJobs()
    h = hold([])
    h.job.progress(10, "start")
    for i in range(2_500):
        h.job.log("info", f"line {i}")
    for n in range(3):
        h.job.event({"n": n})
    report(jobs, h, end={"complete": {"result": 1}})
    [batch] = jobs.sent
    assert [len(r.get("lines", [])) for r in batch] == [1_000, 1_000, 500]
    assert [r["lines"][0]["message"] for r in batch if "lines" in r] == ["line 0", "line 1000", "line 2000"]
    assert [r["event"] for r in batch] == [{"n": 0}, {"n": 1}, {"n": 2}]  # beside the lines
    assert batch[0]["progress"] == {"percent": 10, "message": "start"}
    assert [("complete" in r) for r in batch] == [False, False, True]
    assert all(r["id"] == h.job.id and r["attempt"] == 1 for r in batch)


def test_an_unanswered_request_is_sent_again_as_it_was() -> None:
    jobs = ScriptedJobs(unreachable, unreachable)
    report(jobs, hold([]))
    assert len(jobs.sent) == 3
    assert jobs.sent[0] == jobs.sent[1] == jobs.sent[2]


def test_a_stale_or_finished_answer_makes_it_fall_silent_and_stop_the_handler() -> None:
    lost: list[str] = []
    stale, finished = (
        hold(lost, job_id="01J0000000000000000000000A"),
        hold(lost, job_id="01J0000000000000000000000B"),
    )
    stale.job.log("info", "x")
    finished.job.log("info", "y")

    async def main() -> None:
        jobs = ScriptedJobs(lambda batch: [rejected("STALE"), rejected("ALREADY_FINISHED")])
        reporter = Reporter(direct(jobs), interval=0.01, backoff=QUICK)
        task = asyncio.create_task(reporter.run())
        reporter.add(stale)
        reporter.add(finished)
        await until(lambda: jobs.sent)
        stale.job.log("info", "after")
        reporter.end(stale, {"complete": {"result": 1}})
        reporter.end(finished, {"complete": {"result": 2}})
        reporter.close()
        await asyncio.wait_for(task, PATIENCE_S)
        assert len(jobs.sent) == 1  # nothing more, for either

    asyncio.run(main())
    assert lost == ["stale", "finished"]
    assert stale.job.signal.is_set() and stale.job.stop_reason == "stale"
    assert finished.job.stop_reason == "finished"


def test_an_ending_refused_with_what_broke_a_rule_is_sent_again_alone() -> None:
    jobs = ScriptedJobs(every(rejected("INVALID")))
    h = hold([])
    h.job.log("info", "fine")
    report(jobs, h)
    first, second = jobs.sent
    assert "lines" in first[0] and "complete" in first[0]
    assert second == [{"id": h.job.id, "attempt": 1, "complete": {"result": "done"}}]


def test_a_report_that_raced_a_change_is_sent_again_and_too_many_events_is_not_fatal() -> None:
    jobs = ScriptedJobs(every(rejected("RACE")), every(rejected("TOO_MANY_EVENTS")))
    h = hold([])
    h.job.event({"n": 1})
    report(jobs, h)
    assert len(jobs.sent) >= 2 and jobs.sent[0] == jobs.sent[1]
    assert not h.job.signal.is_set()


def test_a_hold_is_renewed_at_half_its_lease_and_lost_when_renewals_fail_past_it() -> None:
    lost: list[str] = []
    clock = HandClock()

    async def main() -> None:
        renewed = ScriptedJobs()
        reporter = Reporter(direct(renewed), interval=1.0, backoff=QUICK, clock=clock)
        task = asyncio.create_task(reporter.run())
        h = hold(lost, lease=20.0, now=clock.monotonic())
        reporter.add(h)
        await until(lambda: clock.waiting_since(0))

        def touches() -> int:
            return len([r for batch in renewed.sent for r in batch if "touch" in r])

        await step(clock, 9.9)
        assert touches() == 0
        await step(clock, 0.1)
        assert touches() == 1  # at half the lease
        for n in (2, 3, 4):  # two leases in all: renewed at each half
            await step(clock, 10.0)
            assert touches() == n
        assert not lost

        renewed.script = [unreachable] * 100
        await step(clock, 10.0)  # a renewal, and tries again after backoff, all unanswered
        await step(clock, 9.9)
        assert touches() > 5 and not lost  # still within the lease the last renewal gave
        await step(clock, 0.2)
        assert lost == ["lease_expired"] and h.job.signal.is_set()
        reporter.close()
        await asyncio.wait_for(task, PATIENCE_S)

    asyncio.run(main())


def test_an_ending_refused_even_alone_is_given_up_rather_than_sent_forever() -> None:
    jobs = ScriptedJobs(every(rejected("INVALID")), every(rejected("INVALID")))
    report(jobs, hold([]))
    assert len(jobs.sent) == 1  # the ending had nothing else with it: nothing to leave out
