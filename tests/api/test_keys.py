"""Per-key limits through the handlers: `perKeyConcurrency` holds, a full key's backlog never
starves the other keys (nor costs a claim reads), and the order of hand-out holds across keys."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws
from moto.dynamodb import models as moto_models
from moto.dynamodb.models.table import Table

from devserver.wiring import build_runtime
from shared.clock import ManualClock
from shared.config import Config
from shared.jobs.records import new_record
from shared.runtime import Runtime, install
from shared.schema import NewJob
from shared.store import keys
from shared.store.codec import ready_sort
from shared.store.dynamo import TransactionConflict
from shared.store.jobs.insert import _item
from shared.store.keyed import INDEX_LAG_MS
from tests.conftest import mint
from tests.support import Api

SPACE = "/v1/spaces/keys"
JOBS = f"{SPACE}/jobs"
CLAIM = f"{JOBS}:claim"
REPORT = f"{JOBS}:report"
MINUTE = 60_000


def policy_path(name: str) -> str:
    return f"{SPACE}/names/{name}/policy"


def create(api: Api, name: str = "n", **fields: Any) -> str:
    return api.created(SPACE, name, **fields)


def claim(api: Api, count: int = 1, names: list[str] | None = None) -> list[str]:
    return api.claimed(SPACE, count, names)


def report(api: Api, job_id: str, attempt: int = 1, **outcome: Any) -> None:
    answer = api.post(
        REPORT, {"id": job_id, "attempt": attempt, **(outcome or {"complete": {"result": None}})}
    )
    assert answer.status == 200 and "rejection" not in answer.body["outcomes"][0], answer


def waiting(api: Api, job_id: str) -> Any:
    return api.get(f"{JOBS}/{job_id}").body.get("waitingOn")


def test_one_job_of_a_key_runs_at_a_time_by_default_and_the_next_goes_when_it_ends(
    api: Api, clock: ManualClock
) -> None:
    a1 = create(api, concurrencyKey="a")
    a2 = create(api, concurrencyKey="a")
    b1 = create(api, concurrencyKey="b")
    plain = create(api)
    assert claim(api, 10) == [a1, b1, plain]
    assert claim(api, 10) == []
    assert waiting(api, a2) == {"reason": "KEY_CONCURRENCY", "key": "a"}
    report(api, a1)
    assert waiting(api, a2) == {"reason": "WORKER"}
    assert claim(api, 10) == [a2]


def test_per_key_concurrency_is_the_names_policy_and_a_claim_gets_the_room_there_is(api: Api) -> None:
    api.patch(policy_path("n"), {"perKeyConcurrency": 3})
    jobs = [create(api, concurrencyKey="a") for _ in range(5)]
    assert claim(api, 10) == jobs[:3]
    report(api, jobs[1])
    assert claim(api, 10) == [jobs[3]]
    api.patch(policy_path("n"), {"perKeyConcurrency": None})
    report(api, jobs[0])  # a release lists the key again; with no limit, every job goes
    assert claim(api, 10) == [jobs[4]]


def test_a_job_back_from_a_release_or_a_retry_is_found_again(api: Api, clock: ManualClock) -> None:
    job = create(api, concurrencyKey="a")
    assert claim(api) == [job]
    report(api, job, 1, release={})
    assert claim(api) == [job]
    report(api, job, 2, fail={"error": "busy", "retryAfterMs": 5_000})
    assert claim(api) == []
    assert waiting(api, job)["reason"] == "BACKOFF"
    clock.advance(5_000)
    assert claim(api) == [job]


def test_a_key_emptied_and_used_again_is_found_and_its_entry_is_cleared_in_between(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    first = create(api, concurrencyKey="a")
    assert claim(api) == [first]
    report(api, first)
    entry = keys.key_item("keys", "n", "a")
    assert claim(api) == []
    clock.advance(INDEX_LAG_MS)
    assert claim(api) == []  # looks at the empty lane: once
    clock.advance(INDEX_LAG_MS)
    assert claim(api) == []  # and again, the index's lag later: the entry goes
    assert "gsk" not in (rt.db.get(entry) or {})
    again = create(api, concurrencyKey="a")
    assert claim(api) == [again]


def test_priority_and_aging_hold_across_keys(api: Api, clock: ManualClock) -> None:
    old = create(api, concurrencyKey="a")
    clock.advance(MINUTE - 1)
    not_old_enough = create(api, concurrencyKey="b", priority=1)
    unkeyed = create(api, priority=1)
    assert claim(api, 2) == [not_old_enough, unkeyed]
    clock.advance(2)
    newer = create(api, concurrencyKey="c", priority=1)
    assert claim(api) == [old], "waited more than a minute: ahead of a priority-1 job of another key"
    high = create(api, concurrencyKey="d", priority=5)
    assert claim(api, 2) == [high, newer]


def test_within_a_key_priority_decides_too(api: Api, clock: ManualClock) -> None:
    low = create(api, concurrencyKey="a")
    clock.advance(1)
    high = create(api, concurrencyKey="a", priority=3)
    assert claim(api) == [high]
    report(api, high)
    assert claim(api) == [low]


BACKLOG = int(__import__("os").environ.get("KEYS_BACKLOG", "100000"))


@pytest.fixture
def fast_rt(clock: ManualClock) -> Iterator[Runtime]:
    """A runtime on `emit dev`'s embedded DynamoDB (per-partition queries): plain moto reads
    every item for each query, which a 100,000-job backlog makes minutes long."""
    with mock_aws():
        runtime = build_runtime(
            clock=clock, fast=True, config=Config.local().model_copy(update={"claim_wait_ms": 0})
        )
        install(runtime)
        try:
            yield runtime
        finally:
            install(None)


def no_table_backups(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """moto backs up a whole table before each transaction (to roll back a cancelled one):
    with 100,000 items, most of a minute each. None of this test's transactions may be
    cancelled (checked), so none is backed up."""

    class NoTableCopy:
        def __getattr__(self, name: str) -> Any:
            return getattr(copy, name)

        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    monkeypatch.setattr(moto_models, "copy", NoTableCopy())
    transact = rt.db.transact

    def never_cancelled(actions: list[dict[str, Any]]) -> None:
        try:
            transact(actions)
        except TransactionConflict:
            pytest.fail("a transaction was cancelled, with no backup to roll it back")

    monkeypatch.setattr(rt.db, "transact", never_cancelled)


@pytest.mark.moto_only  # its 100,000 jobs need the embedded engine's per-partition queries
def test_a_full_keys_backlog_of_100000_never_starves_another_key_nor_costs_reads(
    fast_rt: Runtime, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One key at its limit with 100,000 pending jobs: a job of another key is handed out by
    the next claim, which reads a few items and index rows, never the backlog."""
    rt = fast_rt
    api = Api(mint(rt, ["admin"]))
    no_table_backups(rt, monkeypatch)
    running = create(api, concurrencyKey="full")
    assert claim(api) == [running]
    # The backlog goes in as a create writes it (the key's entry told first, then one batch
    # of job items), each item the first one's with its own id.
    started = time.monotonic()
    settings = rt.settings.get("keys")
    request = NewJob.model_validate({"name": "n", "concurrencyKey": "full"})
    first = new_record(
        rt.context,
        "keys",
        request,
        settings=settings,
        now=clock.now_ms(),
        at="",
        aging_ms=MINUTE,
        width=keys.READY_SHARDS,
    )
    rt.jobs.insert("keys", [first], key_released=lambda _: False, per_key={"n": 1})
    template = _item(first)
    backlog = []
    for _ in range(BACKLOG - 1):
        job_id = rt.context.ids.new(clock.now_ms())
        backlog.append(template | keys.job("keys", job_id) | {"gsk": ready_sort(first.place, job_id)})
    rt.db.batch_put(backlog)
    print(f"backlog written in {time.monotonic() - started:.1f} s")
    clock.advance(1)
    other = create(api, concurrencyKey="other")

    calls: list[str] = []
    rows_read: list[int] = []

    def counted(method: str) -> Any:
        real = getattr(rt.db, method)

        def call(*args: Any, **kwargs: Any) -> Any:
            answer = real(*args, **kwargs)
            calls.append(method)
            found = answer[0] if method == "query" else answer
            rows_read.append(len(found) if isinstance(found, list) else int(found is not None))
            return answer

        return call

    for method in ("get", "batch_get", "query"):
        monkeypatch.setattr(rt.db, method, counted(method))
    started = time.monotonic()
    assert claim(api, 10) == [other]
    print(
        f"claim in {time.monotonic() - started:.1f} s:",
        f"{len(calls)} reads, {sum(rows_read)} items read: {calls}",
    )
    assert len(calls) <= 12, calls
    assert sum(rows_read) <= 20, list(zip(calls, rows_read, strict=True))
    # And the full key's next job follows its running one, not before.
    report(api, running)
    assert claim(api) == [first.job.id]


def test_a_keys_rate_holds_its_jobs_and_no_other_keys(api: Api, clock: ManualClock) -> None:
    """perKeyRate of 2 a second: a burst of 2, then one every 500 ms; another key has its own."""
    api.patch(policy_path("n"), {"perKeyConcurrency": None, "perKeyRate": {"tokens": 2, "intervalMs": 1_000}})
    a = [create(api, concurrencyKey="a") for _ in range(4)]
    b = create(api, concurrencyKey="b")
    assert claim(api, 10) == [*a[:2], b]
    assert claim(api, 10) == []
    assert waiting(api, a[2]) == {"reason": "KEY_RATE", "key": "a", "untilMs": clock.now_ms() + 500}
    clock.advance(499)
    assert claim(api, 10) == []
    clock.advance(1)
    assert claim(api, 10) == [a[2]]
    clock.advance(500)
    assert claim(api, 10) == [a[3]]
