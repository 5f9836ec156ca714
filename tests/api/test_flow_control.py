"""Flow control through the handlers: policies per name, the order of hand-out (priority
with aging), pause, and why a job waits."""

from __future__ import annotations

from typing import Any

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store import keys
from tests.conftest import mint
from tests.support import Api

SPACE = "/v1/spaces/flow"
JOBS = f"{SPACE}/jobs"
CLAIM = f"{JOBS}:claim"
MINUTE = 60_000

DEFAULT_POLICY = {
    "concurrency": None,
    "rate": None,
    "perKeyConcurrency": 1,
    "perKeyRate": None,
    "paused": False,
    "agingIntervalMs": 60_000,
}


def policy_path(name: str) -> str:
    return f"{SPACE}/names/{name}/policy"


def create(api: Api, name: str = "n", **fields: Any) -> str:
    return api.created(SPACE, name, **fields)


def claim(api: Api, count: int = 1, names: list[str] | None = None) -> list[str]:
    return api.claimed(SPACE, count, names)


# -- policies -------------------------------------------------------------------------


def test_a_name_has_the_default_policy_before_its_first_job(api: Api) -> None:
    answer = api.get(policy_path("reports"))
    assert answer.status == 200
    assert answer.body == {"name": "reports", **DEFAULT_POLICY, "overridden": []}


def test_patch_merges_the_fields_sent_and_null_means_no_limit(api: Api) -> None:
    first = api.patch(policy_path("mail"), {"concurrency": 5, "rate": {"tokens": 10, "intervalMs": 1_000}})
    assert first.status == 200
    assert first.body["concurrency"] == 5 and first.body["rate"] == {"tokens": 10, "intervalMs": 1_000}
    assert first.body["overridden"] == ["concurrency", "rate"]
    second = api.patch(policy_path("mail"), {"perKeyConcurrency": None, "agingIntervalMs": None}).body
    assert second["concurrency"] == 5, "a field left out keeps its value"
    assert second["perKeyConcurrency"] is None and second["agingIntervalMs"] is None
    assert second["overridden"] == ["concurrency", "rate", "perKeyConcurrency", "agingIntervalMs"]
    assert api.get(policy_path("mail")).body == second


def test_the_space_default_applies_to_every_name_that_does_not_set_the_field(api: Api) -> None:
    space = api.patch(SPACE, {"policy": {"perKeyConcurrency": 3, "paused": True}}).body
    assert space["policy"] == DEFAULT_POLICY | {"perKeyConcurrency": 3, "paused": True}
    assert api.get(policy_path("a")).body == {
        "name": "a",
        **DEFAULT_POLICY,
        "perKeyConcurrency": 3,
        "paused": True,
        "overridden": [],
    }
    api.patch(SPACE, {"policy": {"agingIntervalMs": 5_000}})
    assert api.get(SPACE).body["policy"]["perKeyConcurrency"] == 3, "the space's policy merges too"
    own = api.patch(policy_path("a"), {"paused": False}).body
    assert own["paused"] is False and own["perKeyConcurrency"] == 3 and own["overridden"] == ["paused"]
    reset = api.post(f"{policy_path('a')}:reset")
    assert reset.status == 200
    assert reset.body["paused"] is True and reset.body["overridden"] == [], "back to the space's default"
    assert api.patch(SPACE, {"policy": None}).body["policy"] == DEFAULT_POLICY
    assert api.get(policy_path("a")).body == {"name": "a", **DEFAULT_POLICY, "overridden": []}


def test_a_policy_set_before_the_first_job_lists_the_name_and_holds_for_its_jobs(
    api: Api, rt: Runtime
) -> None:
    api.patch(policy_path("first"), {"paused": True})
    assert rt.space_store.names("flow") == ["first"] and "flow" in rt.space_store.all_spaces()
    create(api, "first")
    assert claim(api) == [], "the name was paused before its job came"


def test_a_name_in_the_path_is_url_decoded(api: Api) -> None:
    answer = api.patch(f"{SPACE}/names/a%3Ab/policy", {"concurrency": 2})
    assert answer.status == 200 and answer.body["name"] == "a:b"
    assert api.get(policy_path("a:b")).body["concurrency"] == 2


def test_a_policy_change_made_elsewhere_applies_within_a_second(
    api: Api, rt: Runtime, clock: ManualClock
) -> None:
    """Another process's write (straight to the store here) is seen once the cache is a second old."""
    create(api, "n")
    create(api, "n")
    assert len(claim(api)) == 1
    rt.space_store.write_policy("flow", "n", {"paused": True}, clock.now_ms())
    clock.advance(1_000)
    assert claim(api) == []


def test_reading_a_policy_takes_read_and_changing_it_admin(api: Api, rt: Runtime) -> None:
    reader = api.as_token(mint(rt, ["read"], ["flow"]))
    assert reader.get(policy_path("n")).status == 200
    assert reader.patch(policy_path("n"), {"paused": True}).status == 403
    assert reader.post(f"{policy_path('n')}:reset").status == 403
    assert reader.get(f"{SPACE}/diagnostics").status in (200, 404)
    assert api.as_token(mint(rt, ["work"], ["flow"])).get(policy_path("n")).status == 403


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"concurrency": 0}, "concurrency: must be at least 1"),
        ({"concurrency": 100_001}, "concurrency: must be at most 100000"),
        ({"concurrency": "5"}, "concurrency: must be an integer"),
        ({"rate": {"tokens": 0, "intervalMs": 1_000}}, "rate.tokens: must be at least 1"),
        ({"rate": {"tokens": 1, "intervalMs": 999}}, "rate.intervalMs: must be at least 1000"),
        ({"perKeyRate": {"tokens": 1}}, "perKeyRate.intervalMs: is required"),
        ({"perKeyConcurrency": 0}, "perKeyConcurrency: must be at least 1"),
        ({"agingIntervalMs": 86_400_001}, "agingIntervalMs: must be at most 86400000"),
        ({"paused": None}, "paused: must be true or false"),
        ({"pause": True}, "pause: is not a known field"),
    ],
)
def test_a_bad_policy_is_400_naming_the_field(api: Api, body: dict[str, Any], message: str) -> None:
    answer = api.patch(policy_path("n"), body)
    assert (answer.status, answer.body["message"]) == (400, message)
    space = api.patch(SPACE, {"policy": body})
    assert (space.status, space.body["message"]) == (400, f"policy.{message}")


@pytest.mark.parametrize("name", ["bad%20name", "x" * 129, "caf%C3%A9", "trailing%0A"])
def test_a_bad_name_in_the_path_is_400(api: Api, name: str) -> None:
    for answer in (
        api.get(policy_path(name)),
        api.patch(policy_path(name), {"paused": True}),
        api.post(f"{policy_path(name)}:reset"),
    ):
        assert (answer.status, answer.body["message"]) == (400, "name: must be 1-128 of A-Z a-z 0-9 . _ : -")


# -- new job fields ----------------------------------------------------------------------


def test_priority_and_concurrency_key_are_kept_and_shown(api: Api) -> None:
    plain = create(api)
    marked = create(api, priority=-7, concurrencyKey="tenant-42")
    shown = api.get(f"{JOBS}/{marked}").body
    assert shown["priority"] == -7 and shown["concurrencyKey"] == "tenant-42"
    assert {k: api.get(f"{JOBS}/{plain}").body[k] for k in ("priority", "concurrencyKey")} == {
        "priority": 0,
        "concurrencyKey": None,
    }
    listed = {j["id"]: j for j in api.get(JOBS).body["jobs"]}
    assert listed[marked]["priority"] == -7 and listed[marked]["concurrencyKey"] == "tenant-42"


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ({"priority": 1_001}, "priority: must be at most 1000"),
        ({"priority": -1_001}, "priority: must be at least -1000"),
        ({"priority": 1.5}, "priority: must be an integer"),
        ({"concurrencyKey": ""}, "concurrencyKey: must be at least 1 characters"),
        ({"concurrencyKey": "k" * 257}, "concurrencyKey: must be at most 256 characters"),
    ],
)
def test_bad_job_fields_are_400(api: Api, job: dict[str, Any], message: str) -> None:
    answer = api.post(JOBS, [{"name": "n"}, {"name": "n", **job}])
    assert (answer.status, answer.body["message"]) == (400, f"jobs[1].{message}")


# -- order of hand-out --------------------------------------------------------------------


def test_higher_priority_goes_first_and_equal_priority_oldest_first(api: Api, clock: ManualClock) -> None:
    low = create(api, priority=-1)
    clock.advance(1)
    normal = [create(api) for _ in range(3)]
    clock.advance(1)
    high = create(api, priority=2)
    assert claim(api, 10) == [high, *normal, low]


def test_a_job_that_waited_long_enough_goes_before_a_newer_higher_one(api: Api, clock: ManualClock) -> None:
    """With the default aging of a minute, one step of priority is worth a minute's wait."""
    old = create(api, "n")
    clock.advance(MINUTE - 1)
    not_old_enough = create(api, "n", priority=1)
    assert claim(api) == [not_old_enough]
    clock.advance(2)
    newer = create(api, "n", priority=1)
    assert claim(api) == [old], "waited more than a minute: ahead of a priority-1 job made now"
    assert claim(api) == [newer]


def test_the_aging_interval_is_the_one_in_force_when_the_job_became_claimable(
    api: Api, clock: ManualClock
) -> None:
    api.patch(policy_path("n"), {"agingIntervalMs": 10_000})
    old = create(api, "n")
    clock.advance(10_001)
    newer = create(api, "n", priority=1)
    api.patch(policy_path("n"), {"agingIntervalMs": 3_600_000})
    assert claim(api, 2) == [old, newer], "both placed under 10 s: the change counts for jobs after it"


def test_strict_priority_outweighs_any_wait(api: Api, clock: ManualClock) -> None:
    api.patch(policy_path("n"), {"agingIntervalMs": None})
    old_low = create(api, "n", priority=-1)
    old = create(api, "n")
    clock.advance(300 * 86_400_000)
    new_high = create(api, "n", priority=1)
    newer = create(api, "n")
    assert claim(api, 4) == [new_high, old, newer, old_low]


def test_a_delayed_job_is_handed_out_to_the_millisecond_and_never_blocks_due_work(
    api: Api, clock: ManualClock
) -> None:
    urgent_later = create(api, "n", priority=1_000, delayMs=10_000)
    lowly = create(api, "n", priority=-1_000)
    assert claim(api) == [lowly], "a delayed job of top priority does not hold back due work"
    clock.advance(9_999)
    assert claim(api) == []
    after = create(api, "n", priority=999)
    clock.advance(1)
    assert claim(api) == [urgent_later], "due now, it takes its place by priority among due jobs"
    assert claim(api) == [after]


def test_a_delayed_job_due_now_goes_first_behind_a_deep_due_lane(api: Api, clock: ManualClock) -> None:
    """Every partition holds more due jobs than a claim reads: the later jobs whose time has
    come are read apart, and placed by their order."""
    urgent = create(api, "n", priority=1_000, delayMs=1_000)
    api.post(JOBS, [{"name": "n"} for _ in range(100)])
    clock.advance(1_000)
    assert claim(api) == [urgent]


def test_an_idle_name_costs_one_index_query_a_partition(
    api: Api, rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(api, "busy", delayMs=60_000)
    index_queries = []
    query = rt.db.query

    def counted(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("index"):
            index_queries.append(kwargs["vals"][":p"])
        return query(*args, **kwargs)

    monkeypatch.setattr(rt.db, "query", counted)
    assert claim(api, 10, ["idle", "busy"]) == []
    assert sorted(index_queries) == sorted(
        keys.ready_partitions("flow", "idle") + keys.ready_partitions("flow", "busy")
    )


def test_a_job_back_from_a_retry_or_a_release_keeps_its_priority(api: Api, clock: ManualClock) -> None:
    high = create(api, "n", priority=5)
    assert claim(api) == [high]
    api.post(f"{JOBS}:report", {"id": high, "attempt": 1, "release": {}})
    rest = [create(api, "n") for _ in range(2)]
    assert claim(api) == [high]
    api.post(f"{JOBS}:report", {"id": high, "attempt": 2, "fail": {"error": "busy", "retryAfterMs": 5_000}})
    clock.advance(5_000)
    assert claim(api, 3) == [high, *rest]


def test_claims_merge_names_by_order(api: Api, clock: ManualClock) -> None:
    a = create(api, "a")
    clock.advance(1)
    b = create(api, "b", priority=1)
    clock.advance(1)
    a2 = create(api, "a")
    assert claim(api, 3, ["a", "b"]) == [b, a, a2]


# -- pause ------------------------------------------------------------------------------


def test_a_paused_name_hands_out_nothing_until_it_is_resumed(api: Api) -> None:
    held = create(api, "held")
    free = create(api, "free")
    api.patch(policy_path("held"), {"paused": True})
    assert create(api, "held") != "", "creates are still accepted"
    assert claim(api, 10) == [free]
    assert claim(api, 10, ["held"]) == []
    api.patch(policy_path("held"), {"paused": False})
    assert claim(api, 1, ["held"]) == [held]


def test_pausing_the_space_default_pauses_every_name_without_its_own_setting(api: Api) -> None:
    create(api, "a")
    b = create(api, "b")
    api.patch(SPACE, {"policy": {"paused": True}})
    api.patch(policy_path("b"), {"paused": False})
    assert claim(api, 10) == [b]


# -- why a job waits --------------------------------------------------------------------


def waiting(api: Api, job_id: str) -> dict[str, Any] | None:
    return api.get(f"{JOBS}/{job_id}").body.get("waitingOn")


def test_a_pending_job_says_what_it_waits_on(api: Api, clock: ManualClock) -> None:
    delayed = create(api, "n", delayMs=5_000)
    assert waiting(api, delayed) == {"reason": "DELAY", "untilMs": clock.now_ms() + 5_000}
    api.patch(policy_path("n"), {"paused": True})
    assert waiting(api, delayed)["reason"] == "DELAY", "its time comes first"  # type: ignore[index]
    clock.advance(5_000)
    assert waiting(api, delayed) == {"reason": "PAUSED"}
    api.post(f"{policy_path('n')}:reset")
    assert waiting(api, delayed) == {"reason": "WORKER"}
    assert claim(api) == [delayed]
    assert waiting(api, delayed) is None, "a running job waits on nothing"
    api.post(f"{JOBS}:report", {"id": delayed, "attempt": 1, "fail": {"error": "x", "retryAfterMs": 7_000}})
    assert waiting(api, delayed) == {"reason": "BACKOFF", "untilMs": clock.now_ms() + 7_000}


# -- diagnostics ------------------------------------------------------------------------


def test_diagnostics_show_each_name_with_pending_jobs_or_a_policy_of_its_own(
    api: Api, clock: ManualClock
) -> None:
    first = clock.now_ms()
    create(api, "mail")
    clock.advance(1_000)
    create(api, "mail", priority=3)
    create(api, "mail", delayMs=60_000)
    retried = create(api, "retried")
    create(api, "gone")
    claim(api, 1, ["retried"])
    api.post(f"{JOBS}:report", {"id": retried, "attempt": 1, "fail": {"error": "x"}})
    claim(api, 1, ["gone"])  # running: not pending, no policy of its own
    api.patch(policy_path("quiet"), {"paused": True})
    api.patch(policy_path("mail"), {"concurrency": 2})
    answer = api.get(f"{SPACE}/diagnostics")
    assert answer.status == 200
    names = {n["name"]: n for n in answer.body["names"]}
    assert list(names) == ["mail", "quiet", "retried"]
    assert names["mail"] == {
        "name": "mail",
        "pending": 3,
        "claimable": 2,
        "running": 0,
        "capped": False,
        "policy": DEFAULT_POLICY | {"concurrency": 2},
        "waitingOn": ["DELAY", "WORKER"],
        "oldestClaimableAtMs": first,
    }
    assert names["quiet"]["pending"] == 0 and names["quiet"]["waitingOn"] == []
    assert names["retried"]["waitingOn"] == ["BACKOFF"] and names["retried"]["claimable"] == 0
    api.patch(policy_path("mail"), {"paused": True})
    paused = {n["name"]: n for n in api.get(f"{SPACE}/diagnostics").body["names"]}["mail"]
    assert paused["waitingOn"] == ["DELAY", "PAUSED"]


def test_diagnostics_of_a_space_that_does_not_exist_is_404(api: Api) -> None:
    assert api.get("/v1/spaces/nowhere/diagnostics").status == 404
