"""Every state change is safe at every step (issue 8, point 5).

For each operation: run it once cleanly to learn its writes; then, for each write in turn,
in a fresh service, kill the operation just before that write and, separately, just after
it (the write applied, its answer lost); retry as a client or AWS would (the same request;
the stream record delivered again; the clock's next tick); drive everything to its end
(`World.settle`); and check that no job was lost or left stuck, no attempt handed out
twice, no callback success sent twice (or never), and no record left that nothing removes
(`World.problems`). The write sequences are learned when the tests are collected, so a
change to an operation's writes changes the cases with it.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.faults.harness import HOOK, MINUTE_MS, SPACE, Service, World, embedded_aws, world

_bytes = random.Random(8).randbytes
SIDE = _bytes(1_500).hex()
"""A value too large for the job item, small enough for a side item (`B#`)."""
LARGE = _bytes(400_000).hex()
"""A value too large for a side item even compressed: an S3 object."""
TRACE = "Traceback: " + _bytes(1_500).hex()
CALLBACK = {"url": HOOK}
DAY_MS = 86_400_000


@dataclass(frozen=True)
class Operation:
    """A state change: `setup` makes the state it starts from (answering what `run` needs),
    `run` makes the change once, `retry` is what follows a crash (a client sending the same
    request, AWS delivering the same records, the clock ticking again)."""

    name: str
    setup: Callable[[World], Any]
    run: Callable[[World, Any], object]
    retry: Callable[[World, Any], object] | None = None
    loses_records: bool = False
    """Its records are lost to the dead-letter queue, or fed again in an order Lambda never
    uses: the stream's counts (`shared.counts`) cannot be exact, and are not checked. (Every
    other operation's are: exact whatever crash and redelivery it meets.)"""

    def again(self, w: World, ctx: Any) -> object:
        return (self.retry or self.run)(w, ctx)


def nothing(w: World) -> None:
    return None


def one_claimed(w: World) -> tuple[str, int]:
    w.create({"name": "n", "callback": CALLBACK})
    [job] = w.claim(1)
    w.bg.stream()
    return job["id"], job["attempt"]


def reporting(**parts: Any) -> Callable[[World, tuple[str, int]], object]:
    def run(w: World, held: tuple[str, int]) -> object:
        return w.report(*held, **parts)

    return run


def two_pending(w: World) -> list[str]:
    return [w.create({"name": "n", "payload": SIDE, "callback": CALLBACK}).body["id"] for _ in range(2)]


def claimed_then_cancelled(w: World) -> tuple[str, int]:
    held = one_claimed(w)
    w.cancel([held[0]])
    w.bg.stream()
    return held


def unknown_job(w: World) -> tuple[str, int]:
    """A report for a job that does not exist (a typo, or one long removed)."""
    w.create({"name": "n"})
    return "01M3250V00000000000000000Z", 1


def pending_and_running(w: World) -> list[str]:
    ids = [w.create({"name": "n", "callback": CALLBACK}).body["id"] for _ in range(2)]
    w.claim(1)
    w.bg.stream()
    return ids


def lease_ended(w: World) -> None:
    """Two claims in one request (one lease bucket): one lease ends (its job's last attempt),
    the other was renewed and is filed again."""
    last = w.create({"name": "n", "maxAttempts": 1, "callback": CALLBACK}).body["id"]
    w.create({"name": "n", "callback": CALLBACK})
    for job in w.claim(2):
        if job["id"] == last:
            w.held.remove((job["id"], job["attempt"]))  # its worker died: that is why it ends
        else:
            w.report(job["id"], job["attempt"], touch={"leaseMs": 3_600_000})
    w.bg.stream()
    w.clock.advance(5 * MINUTE_MS + 1_000)


def never_claimed(w: World) -> None:
    w.create({"name": "n", "callback": CALLBACK})
    w.bg.stream()
    w.clock.advance(7 * DAY_MS + MINUTE_MS)


def window_changed(w: World) -> None:
    """Pending jobs older than a window made shorter: every name's check is filed for now
    (and again every period until the window has passed), not where the old window put it."""
    two_pending(w)
    w.bg.stream()
    w.clock.advance(2 * 3_600_000)
    w.request("PATCH", f"/v1/spaces/{SPACE}", {"unclaimedMs": 3_600_000})


def callback_failed_once(w: World) -> None:
    job_id, attempt = one_claimed(w)
    w.report(job_id, attempt, complete={"result": "r"})
    w.receiver.fail_next = 1
    w.bg.stream()
    w.clock.advance(5_000)


def finished_unrecorded(w: World) -> None:
    """A job that finished with a callback whose stream records all went to the dead-letter
    queue: a grace minute later the clock finds its mark and records the delivery itself."""
    job_id, attempt = one_claimed(w)
    w.report(job_id, attempt, complete={"result": "r"})
    w.bg.records()  # read, never handed to the stream function
    w.clock.advance(MINUTE_MS + 1_000)


def two_claimable_one_answer(w: World) -> None:
    """Two pending jobs whose payloads fit a claim's budget as stored, but not once shown
    in its answer: the claim gives the second back."""
    for _ in range(2):
        w.create({"name": "n", "payload": SIDE, "callback": CALLBACK})
    w.bg.stream()
    config = dataclasses.replace(w.rt.context.config, claim_payload_bytes=2 * len(SIDE) + 200)
    w.rt.context = dataclasses.replace(w.rt.context, config=config)


def key_held(w: World) -> None:
    w.create({"name": "n", "key": "k", "callback": CALLBACK})
    w.bg.stream()


def next_tick(w: World, ctx: Any) -> None:
    w.clock.advance(MINUTE_MS)
    w.tick_invoke()


def finished_records(w: World) -> list[dict[str, Any]]:
    """The stream records of a job with a callback that just completed, not yet delivered."""
    job_id, attempt = one_claimed(w)
    w.report(job_id, attempt, complete={"result": "r"})
    return w.bg.records()


NOTICES = {"alert": frozenset({"FAILED"}), "audit": frozenset({"COMPLETED", "FAILED", "CANCELLED"})}


def failed_records_with_notices(w: World) -> list[dict[str, Any]]:
    """The stream records of a job that just failed for good, in a space whose failure and
    settled notices go to two names: its record makes two notice jobs."""
    w.request(
        "PATCH",
        f"/v1/spaces/{SPACE}",
        {
            "onFailure": {"name": "alert"},
            "onSettled": {"name": "audit", "statuses": sorted(NOTICES["audit"])},
        },
    )
    w.notify = dict(NOTICES)
    job_id, attempt = one_claimed(w)
    w.report(job_id, attempt, fail={"error": "card declined", "unrecoverable": True})
    return w.bg.records()


def removal_records(w: World) -> list[dict[str, Any]]:
    """The REMOVE record of a job past retention that had every kind of item beside it: a key,
    a side item, lines, an event, an S3 result, a delivered callback."""
    w.request("PATCH", f"/v1/spaces/{SPACE}", {"completedRetentionMs": MINUTE_MS})
    w.create({"name": "n", "key": "k", "payload": SIDE, "callback": CALLBACK})
    [job] = w.claim(1)
    w.report(
        job["id"],
        job["attempt"],
        lines=[{"level": "INFO", "message": "one"}],
        event={"step": 1},
        complete={"result": LARGE},
    )
    w.bg.stream()
    w.clock.advance(MINUTE_MS)
    w.expire_ttl()
    return w.bg.records()


def limited(setup: Callable[[World], Any]) -> Callable[[World], Any]:
    """`setup` in a space with a `maxInFlight` and a name with a `concurrency` and a `rate`:
    every job holds a place in the space's count, every running one a slot."""

    def run(w: World) -> Any:
        w.request("PATCH", f"/v1/spaces/{SPACE}", {"maxInFlight": 10})
        policy = {"concurrency": 2, "rate": {"tokens": 100, "intervalMs": 1_000}}
        w.request("PATCH", f"/v1/spaces/{SPACE}/names/n/policy", policy)
        return setup(w)

    return run


LIMITED = [
    Operation(
        "limited-create-batch",
        limited(nothing),
        lambda w, _: w.create(
            {
                "jobs": [
                    {"name": "n", "callback": CALLBACK},
                    {"name": "n", "payload": SIDE, "callback": CALLBACK},
                ]
            }
        ),
    ),
    Operation("limited-create-keyed", limited(nothing), lambda w, _: w.create({"name": "n", "key": "k"})),
    Operation("limited-claim", limited(two_pending), lambda w, _: w.claim(2)),
    Operation("limited-complete", limited(one_claimed), reporting(complete={"result": SIDE})),
    Operation("limited-fail-retry", limited(one_claimed), reporting(fail={"error": TRACE})),
    Operation(
        "limited-fail-for-good", limited(one_claimed), reporting(fail={"error": "e", "unrecoverable": True})
    ),
    Operation("limited-release", limited(one_claimed), reporting(release={})),
    Operation("limited-cancel", limited(pending_and_running), lambda w, ids: w.cancel(ids)),
    Operation("limited-tick-lease-expiry", limited(lease_ended), lambda w, _: w.tick_invoke(), next_tick),
    Operation("limited-tick-never-claimed", limited(never_claimed), lambda w, _: w.tick_invoke(), next_tick),
]
"""The state changes that take or let go of a count (issue 10, point 2)."""


def keyed(*fields: dict[str, Any]) -> Callable[[World], list[str]]:
    """Pending jobs of a key each (one a dict of fields), in a name with a `concurrency` too."""

    def run(w: World) -> list[str]:
        w.request("PATCH", f"/v1/spaces/{SPACE}/names/n/policy", {"concurrency": 4, "perKeyConcurrency": 1})
        return [w.create({"name": "n", "callback": CALLBACK, **f}).body["id"] for f in fields]

    return run


def keyed_claimed(w: World) -> tuple[str, int]:
    """A running job of a full key, another of the key waiting."""
    keyed({"concurrencyKey": "q"}, {"concurrencyKey": "q"})(w)
    [job] = w.claim(1)
    w.bg.stream()
    return job["id"], job["attempt"]


def keyed_pending_and_running(w: World) -> list[str]:
    ids = keyed({"concurrencyKey": "q"}, {"concurrencyKey": "q"}, {"concurrencyKey": "r"})(w)
    w.claim(1)
    w.bg.stream()
    return ids


def keyed_lease_ended(w: World) -> None:
    """A keyed job's lease ends (its worker died): its key's slot goes back at the tick."""
    keyed({"concurrencyKey": "q", "maxAttempts": 1}, {"concurrencyKey": "q"})(w)
    for job in w.claim(2):
        w.held.remove((job["id"], job["attempt"]))
    w.bg.stream()
    w.clock.advance(5 * MINUTE_MS + 1_000)


KEYED = [
    Operation(
        "keyed-create",
        keyed_claimed,
        lambda w, _: w.create(
            {
                "jobs": [
                    {"name": "n", "concurrencyKey": "q"},
                    {"name": "n", "concurrencyKey": "r", "priority": 3},
                ]
            }
        ),
    ),
    Operation(
        "keyed-claim",
        keyed({"concurrencyKey": "q"}, {"concurrencyKey": "q"}, {"concurrencyKey": "r"}),
        lambda w, _: w.claim(3),
    ),
    Operation("keyed-complete", keyed_claimed, reporting(complete={"result": "r"})),
    Operation("keyed-fail-retry", keyed_claimed, reporting(fail={"error": "e"})),
    Operation("keyed-release", keyed_claimed, reporting(release={})),
    Operation("keyed-cancel", keyed_pending_and_running, lambda w, ids: w.cancel(ids)),
    Operation("keyed-tick-lease-expiry", keyed_lease_ended, lambda w, _: w.tick_invoke(), next_tick),
]
"""The state changes of jobs with a `concurrencyKey`: no key slot leaks, no keyed job is left
where no claim finds it (issue 10, point 3)."""


def deadlines_due(w: World) -> None:
    """Two pending jobs filed in one deadline bucket: one past its deadline, the other's
    still ahead (filed again by the tick)."""
    jobs = [
        {"name": "n", "expiresInMs": MINUTE_MS, "callback": CALLBACK},
        {"name": "n", "expiresInMs": 60 * MINUTE_MS, "callback": CALLBACK},
    ]
    w.create({"jobs": jobs})
    w.bg.stream()
    w.clock.advance(MINUTE_MS + 1_000)


def expired_then_live(w: World) -> None:
    """A job past its deadline first in its name's order, a job without one behind it."""
    w.create({"name": "n", "expiresInMs": MINUTE_MS, "callback": CALLBACK})
    w.clock.advance(1)
    w.create({"name": "n", "callback": CALLBACK})
    w.bg.stream()
    w.clock.advance(MINUTE_MS)


def claimed_past_deadline(w: World) -> tuple[str, int]:
    """A running job whose deadline passed before its worker reported (the clock has not run)."""
    w.create({"name": "n", "expiresInMs": MINUTE_MS, "callback": CALLBACK})
    [job] = w.claim(1, leaseMs=10 * MINUTE_MS)
    w.bg.stream()
    w.clock.advance(MINUTE_MS)
    return job["id"], job["attempt"]


DEADLINES = [
    Operation(
        "deadline-create",
        nothing,
        lambda w, _: w.create(
            {
                "jobs": [
                    {"name": "n", "expiresInMs": MINUTE_MS},
                    {"name": "n", "payload": SIDE, "expiresInMs": 1},
                ]
            }
        ),
    ),
    Operation("deadline-tick", deadlines_due, lambda w, _: w.tick_invoke(), next_tick),
    Operation("deadline-claim", expired_then_live, lambda w, _: w.claim(2)),
    Operation("deadline-report", claimed_past_deadline, reporting(complete={"result": SIDE})),
    Operation("limited-deadline-tick", limited(deadlines_due), lambda w, _: w.tick_invoke(), next_tick),
    Operation("limited-deadline-claim", limited(expired_then_live), lambda w, _: w.claim(2)),
]
"""Jobs with deadlines: filed before they exist, cancelled once by whoever finds them past it
(the clock, a claim, a report), their holds let go, their bucket removed."""

EVERY_MINUTE = {"cron": "* * * * *", "job": {"name": "n", "payload": {"n": 1}}}
"""A schedule that fires at every minute (the harness's clock starts 20 s past one)."""


def past_next_minute(w: World) -> None:
    w.clock.advance(MINUTE_MS - w.clock.now_ms() % MINUTE_MS + 1_000)


def schedule_made(**fields: Any) -> Callable[[World], None]:
    def setup(w: World) -> None:
        w.put_schedule("every-minute", EVERY_MINUTE | fields)

    return setup


def schedule_due(**fields: Any) -> Callable[[World], None]:
    """A schedule whose first fire time has just passed: the tick makes its job."""

    def setup(w: World) -> None:
        schedule_made(**fields)(w)
        past_next_minute(w)

    return setup


def schedule_fired(*, finished: bool, due: bool = True, **fields: Any) -> Callable[[World], None]:
    """A schedule whose first job the clock made (claimed; `finished`: completed), and whose
    second fire time has just passed (`due`; else it is ahead)."""

    def setup(w: World) -> None:
        schedule_due(**fields)(w)
        w.tick_invoke()
        [job] = w.claim(1)
        if finished:
            w.report(job["id"], job["attempt"], complete={"result": "r"})
        w.bg.stream()
        if due:
            past_next_minute(w)

    return setup


SCHEDULES = [
    Operation("schedule-put", nothing, lambda w, _: w.put_schedule("every-minute", EVERY_MINUTE)),
    # From every minute to half past each hour, between two minutes: the timer of the next
    # minute stays filed, and must make nothing.
    Operation(
        "schedule-patch-cron",
        schedule_fired(finished=True, due=False),
        lambda w, _: w.patch_schedule("every-minute", {"cron": "30 * * * *"}),
    ),
    # A trigger is the schedule's last run, which `overlap: SKIP` waits for.
    Operation(
        "schedule-trigger-keyed",
        schedule_made(overlap="SKIP"),
        lambda w, _: w.trigger("every-minute", key="deploy-42"),
    ),
    Operation("tick-schedule-fire", schedule_due(), lambda w, _: w.tick_invoke(), next_tick),
    # SKIP, the last job finished: the fire looks for its own job, then the last one, and makes it.
    Operation(
        "tick-schedule-fire-skip",
        schedule_fired(finished=True, overlap="SKIP"),
        lambda w, _: w.tick_invoke(),
        next_tick,
    ),
    # SKIP, the last job still running: the time is passed over, and the next filed.
    Operation(
        "tick-schedule-skip-running",
        schedule_fired(finished=False, overlap="SKIP"),
        lambda w, _: w.tick_invoke(),
        next_tick,
    ),
]
"""Schedules: their edits, a trigger, and the clock's fires (issue 20): one job per fire time,
never two, never none; a timer filed for the next; SKIP never overlapping its last job."""

OPERATIONS = [
    Operation(
        "create-single", nothing, lambda w, _: w.create({"name": "n", "payload": SIDE, "callback": CALLBACK})
    ),
    Operation(
        "create-batch",
        nothing,
        lambda w, _: w.create(
            {
                "jobs": [
                    {"name": "n", "callback": CALLBACK},
                    {"name": "n", "payload": SIDE, "callback": CALLBACK},
                    {"name": "n", "payload": LARGE, "callback": CALLBACK},
                ]
            }
        ),
    ),
    Operation(
        "create-keyed",
        nothing,
        lambda w, _: w.create({"name": "n", "key": "k", "payload": SIDE, "callback": CALLBACK}),
    ),
    # A repeat of a held key with a large payload: the payload, written first, is removed.
    Operation(
        "create-keyed-duplicate-s3",
        key_held,
        lambda w, _: w.create({"name": "n", "key": "k", "payload": LARGE, "callback": CALLBACK}),
    ),
    Operation("claim", two_pending, lambda w, _: w.claim(2)),
    Operation("claim-give-back", two_claimable_one_answer, lambda w, _: w.claim(2)),
    Operation("report-touch", one_claimed, reporting(touch={"leaseMs": 600_000})),
    Operation(
        "report-progress-lines-event",
        one_claimed,
        reporting(
            progress={"percent": 50, "message": "half"},
            lines=[{"level": "INFO", "message": "a"}, {"level": "WARN", "message": "b"}],
            event={"step": 1},
        ),
    ),
    Operation("complete-small", one_claimed, reporting(complete={"result": {"ok": True}})),
    Operation("complete-side-item", one_claimed, reporting(complete={"result": SIDE})),
    Operation("complete-s3", one_claimed, reporting(complete={"result": LARGE})),
    Operation(
        "complete-with-lines-event",
        one_claimed,
        reporting(lines=[{"level": "INFO", "message": "done"}], event={"step": 2}, complete={"result": 1}),
    ),
    Operation("complete-refused-cancelled", claimed_then_cancelled, reporting(complete={"result": SIDE})),
    Operation("complete-refused-unknown-id", unknown_job, reporting(complete={"result": SIDE})),
    Operation("fail-retry", one_claimed, reporting(fail={"error": TRACE})),
    Operation("fail-for-good", one_claimed, reporting(fail={"error": TRACE, "unrecoverable": True})),
    Operation("release", one_claimed, reporting(release={})),
    Operation("cancel", pending_and_running, lambda w, ids: w.cancel(ids)),
    Operation("tick-lease-expiry", lease_ended, lambda w, _: w.tick_invoke(), next_tick),
    Operation("tick-never-claimed", never_claimed, lambda w, _: w.tick_invoke(), next_tick),
    Operation(
        "window-changed",
        two_pending,
        lambda w, _: w.request("PATCH", f"/v1/spaces/{SPACE}", {"unclaimedMs": 3_600_000}),
    ),
    Operation("tick-window-changed", window_changed, lambda w, _: w.tick_invoke(), next_tick),
    Operation("tick-callback-retry", callback_failed_once, lambda w, _: w.tick_invoke(), next_tick),
    Operation(
        "tick-callback-unrecorded",
        finished_unrecorded,
        lambda w, _: w.tick_invoke(),
        next_tick,
        loses_records=True,
    ),
    Operation("stream-finish-callback", finished_records, lambda w, records: w.stream_invoke(records)),
    # The same, when the record's retries run out (the dead-letter queue): nothing is redelivered.
    Operation(
        "stream-finish-callback-dlq",
        finished_records,
        lambda w, records: w.stream_invoke(records),
        lambda w, records: None,
        loses_records=True,
    ),
    Operation(
        "stream-finish-notices", failed_records_with_notices, lambda w, records: w.stream_invoke(records)
    ),
    # The records fed again reversed: a notice made is found by its own id, in any order.
    Operation(
        "stream-finish-notices-reversed",
        failed_records_with_notices,
        lambda w, records: w.stream_invoke(records),
        lambda w, records: w.stream_invoke([*reversed(records), *records]),
        loses_records=True,
    ),
    Operation("stream-retention-remove", removal_records, lambda w, records: w.stream_invoke(records)),
    # The same record lost to the dead-letter queue before the stream function ever ran it.
    Operation("stream-retention-remove-dlq", removal_records, lambda w, records: None, loses_records=True),
    *LIMITED,
    *KEYED,
    *DEADLINES,
    *SCHEDULES,
]
BY_NAME = {op.name: op for op in OPERATIONS}


@functools.cache
def write_sequences() -> dict[str, list[tuple[str, bool]]]:
    """Each operation's writes when nothing fails, learned from a clean run, each with
    whether it applied."""
    found = {}
    with embedded_aws() as aws:
        for op in OPERATIONS:
            with world(aws) as w:
                ctx = op.setup(w)
                found[op.name] = w.count(lambda op=op, w=w, ctx=ctx: op.run(w, ctx))
    return found


EXPECTED_TO_FAIL: dict[str, str] = {
    "stream-retention-remove-dlq/clean": (
        "found by this harness, left alone (README, Alarms: dead letters): a retention REMOVE "
        "record lost to the dead-letter queue leaves the job's lines, events, side items, "
        "delivery record and key item (held for good) behind, and nothing else removes them"
    ),
}
"""Cases that fail on today's code, by id, with the defect that makes them fail. The marks
are strict: a fix shows up as XPASS, and its marks must go.

Issue 8's defects 4, 5 and 6 once had marks here; their cases now pass:
`stream-finish-callback-dlq/before-1-put-C` and `tick-callback-unrecorded/*` (4: the
clock records a delivery the stream never did), `complete-refused-*` (5: a refused
report writes no value), `create-*/*-transact-S.name+SPACES` (6: a name is listed in one
transaction with its space). So does the payload side item this harness found left behind
by a create killed between it and its job (`create-*/*-transact-J+B.payload`: they are now
one transaction)."""


@dataclass(frozen=True)
class Case:
    op: str
    n: int  # 0: no crash
    when: str
    write: str

    @property
    def id(self) -> str:
        return f"{self.op}/clean" if self.n == 0 else f"{self.op}/{self.when}-{self.n}-{self.write}"


def cases() -> list[Case]:
    """A clean case, and a kill before and after each write, less the kills that would
    repeat another case exactly (the state a case starts from is the clean run's up to
    the kill): after a write that applied nothing (its condition failed) is before it;
    and before the first write of an operation retried as it ran is the clean case."""
    out = []
    for op, writes in write_sequences().items():
        out.append(Case(op, 0, "", ""))
        for n, (write, applied) in enumerate(writes, start=1):
            if n > 1 or BY_NAME[op].retry is not None:
                out.append(Case(op, n, "before", write))
            if applied:
                out.append(Case(op, n, "after", write))
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        params = []
        for case in cases():
            reason = EXPECTED_TO_FAIL.get(case.id)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(case, id=case.id, marks=marks))
        metafunc.parametrize("case", params)


@pytest.fixture(scope="module")
def aws() -> Iterator[Service]:
    with embedded_aws() as service:
        yield service


def test_crash(aws: Service, case: Case) -> None:
    op = BY_NAME[case.op]
    with world(aws) as w:
        ctx = op.setup(w)
        if case.n == 0:
            op.run(w, ctx)
        else:
            w.crash(lambda: op.run(w, ctx), case.n, case.when)
            assert w.faults.fired is not None and w.faults.fired.write == case.write, (
                "the operation's writes differ from its clean run"
            )
            op.again(w, ctx)
        w.settle()
        problems = w.problems()
        if op.loses_records:
            # The gauges heal (the recount, `shared.recount`); the waiting counts do not.
            problems = [p for p in problems if not p.startswith("count WAIT")]
        assert problems == []


def test_every_expected_failure_names_a_case() -> None:
    """A mark for a case that no longer exists (its operation's writes changed) would hide
    nothing and mean nothing: keep the list honest."""
    assert set(EXPECTED_TO_FAIL) - {c.id for c in cases()} == set()
