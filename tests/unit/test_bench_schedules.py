"""`bench.schedules`: what a schedule's fire and PUT cost, and an idle tick among 100,000
schedules (here a few hundred: the tick reads the books' slot maps whatever is filed later)."""

from __future__ import annotations

from typing import Any

from moto import mock_aws

from bench import idle
from bench import schedules as bench
from bench.world import moto_runtime
from shared import limits
from shared.clock import ManualClock
from shared.jobs import schedules
from shared.schedules import next_fire
from shared.store import dynamo
from shared.store.timers import decode


def test_the_fire_writes_its_job_its_next_timer_and_its_schedule_once_each() -> None:
    cost = bench.fire_cost()
    calls = {op: int(figures["calls"]) for op, figures in cost.fire.by_operation.items()}
    # The job, the next time's bucket and the schedule (puts); the slot's mark; the due bucket
    # removed. Reads: the slot maps, the due bucket, the name's policies; the schedule (not
    # again after its write: the next time is ahead) and the space's settings.
    assert calls == {"PutItem": 3, "UpdateItem": 1, "BatchWriteItem": 1, "Query": 3, "GetItem": 2}
    assert cost.fire.calls == sum(calls.values())
    # The edit: the token, the schedule (none yet); the listing, the job's name with its
    # space (a transaction, once), the slot's mark, the bucket, the item.
    assert {op: int(f["calls"]) for op, f in cost.put.by_operation.items()} == {
        "GetItem": 2,
        "PutItem": 3,
        "TransactWriteItems": 1,
        "UpdateItem": 1,
    }


def test_the_schedules_made_in_bulk_are_the_edits_own_writes() -> None:
    """The item, the listing entry and the timer (its slot, its time) a schedule made in bulk
    has are those the edit writes one call at a time."""
    with mock_aws():
        clock = ManualClock()
        rt, _ = moto_runtime(clock, serialized=True)
        schedules.put(rt.context, bench.SPACE, "one", bench.body("5 3 * * *"))
        assert bench.make_many(rt, iter([("other", "5 3 * * *")])) == 1
        items = rt.db.query("pk = :pk", vals={":pk": f"SCHEDULES#{bench.SPACE}"})[0]
        assert [i["sk"] for i in items] == ["one", "other"]
        one, other = (rt.db.get({"pk": f"SC#{bench.SPACE}#{sid}", "sk": "-"}) for sid in ("one", "other"))
        assert one is not None and other is not None
        assert other == one | {"pk": other["pk"], "id": "other"}
        buckets = [i for i in _scan(rt) if i["pk"].startswith("TIMER#")]
        filed = sorted(
            ((b["pk"].rsplit("#", 1)[0], b["sk"].split("#")[0], *decode(b["jobs"])) for b in buckets),
            key=lambda f: f[2].subject,
        )
        [(slot, at, timer), (slot_2, at_2, timer_2)] = filed
        assert (slot, at) == (slot_2, at_2)
        assert (timer.subject, timer_2.subject) == ("one", "other")
        assert timer.due_ms == timer_2.due_ms == one["nextAtMs"]


def _scan(rt: Any) -> list[dict[str, Any]]:
    answer = rt.dynamodb.scan(TableName=rt.table)
    return [dynamo.deserialize(i) for i in answer["Items"]]


def test_the_first_schedule_fires_alone_after_the_gap_and_the_rest_each_day() -> None:
    now = ManualClock().now_ms()
    made = list(bench.spread_crons(3_000, now))
    assert len({sid for sid, _ in made}) == 3_000
    times = [next_fire(cron, "UTC", now) for _, cron in made]
    assert all(t is not None and now < t <= now + limits.DAY_MS for t in times)
    first, *rest = times
    assert first == (now // limits.MINUTE_MS + bench.GAP_MINUTES) * limits.MINUTE_MS
    assert all(t is not None and first is not None and t > first for t in rest)
    assert len(set(rest)) == limits.DAY_MS // limits.MINUTE_MS - bench.GAP_MINUTES - 1  # every other minute


def test_an_idle_tick_among_schedules_is_one_call_and_a_fire_adds_its_own() -> None:
    measured = bench.idle_tick(300)
    assert measured.idle == 1
    # The tick at which the first falls due is that schedule's fire, whatever the others
    # filed (the job's name was listed by the schedule's edit).
    assert measured.due == bench.fire_cost().fire.calls


def test_bench_idle_prints_the_schedules_lines(capsys: Any) -> None:
    assert idle.main(["--spaces", "--schedules", "40"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "idle tick at 40 schedules: 1 DynamoDB calls"
    assert lines[1].startswith("tick when 1 of 40 schedules falls due: ")
    assert len(lines) == 2
