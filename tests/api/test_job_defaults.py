"""Defaults per job name (`jobDefaults` in a space's settings) through the handlers: the
contract's order of precedence, the job resource showing the values in force, the PATCH's
merge, and the 400s naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from shared.clock import ManualClock
from shared.jobs.create import create
from shared.runtime import Runtime
from shared.schema import JobDefaultsSpec, NewJob
from tests.support import Api

SPACE = "/v1/spaces/defaults"
JOBS = f"{SPACE}/jobs"


def set_defaults(api: Api, defaults: dict[str, Any] | None) -> dict[str, Any]:
    answer = api.patch(SPACE, {"jobDefaults": defaults})
    assert answer.status == 200, answer
    return dict(answer.body["jobDefaults"])


def job(api: Api, job_id: str) -> dict[str, Any]:
    answer = api.get(f"{JOBS}/{job_id}")
    assert answer.status == 200, answer
    return dict(answer.body)


def test_a_job_left_without_options_takes_its_names_defaults(api: Api, clock: ManualClock) -> None:
    backoff = {"kind": "linear", "maxMs": 9_000, "jitter": True}
    set_defaults(
        api,
        {
            "mail": {
                "priority": 7,
                "maxAttempts": 9,
                "timeoutMs": 90_000,
                "backoffMs": 3_000,
                "backoff": backoff,
                "concurrencyKey": "smtp",
                "delayMs": 60_000,
            }
        },
    )
    now = clock.now_ms()
    shown = job(api, api.created(SPACE, "mail"))
    assert shown["priority"] == 7
    assert shown["maxAttempts"] == 9
    assert shown["timeoutMs"] == 90_000
    assert shown["backoffMs"] == 3_000
    assert shown["backoff"] == backoff
    assert shown["concurrencyKey"] == "smtp"
    assert shown["runAtMs"] == now + 60_000
    other = job(api, api.created(SPACE, "other"))
    assert (other["priority"], other["maxAttempts"], other["concurrencyKey"]) == (0, 4, None)
    assert other["runAtMs"] == now, "another name's jobs keep the built-in defaults"


def test_precedence_job_then_name_then_space_then_built_in(api: Api) -> None:
    assert api.patch(SPACE, {"maxAttempts": 6, "timeoutMs": 120_000, "backoffMs": 500}).status == 200
    set_defaults(api, {"mail": {"maxAttempts": 2, "backoff": {"maxMs": 7_000}}})
    own = job(api, api.created(SPACE, "mail", maxAttempts=11, backoff={"kind": "constant"}))
    assert own["maxAttempts"] == 11, "the job's own field wins"
    assert own["backoff"] == {"kind": "constant", "maxMs": 7_000, "jitter": False}, (
        "a backoff part the job leaves out is the name's, then the built-in one"
    )
    named = job(api, api.created(SPACE, "mail"))
    assert named["maxAttempts"] == 2, "then jobDefaults for its name"
    assert named["timeoutMs"] == 120_000 and named["backoffMs"] == 500, "then the space's settings"
    assert named["priority"] == 0 and named["concurrencyKey"] is None, "then the built-in default"


def test_a_field_sent_as_null_takes_the_default_too(api: Api) -> None:
    set_defaults(api, {"mail": {"maxAttempts": 3, "concurrencyKey": "k"}})
    shown = job(api, api.created(SPACE, "mail", maxAttempts=None, concurrencyKey=None))
    assert (shown["maxAttempts"], shown["concurrencyKey"]) == (3, "k")


def test_run_at_sent_wins_over_a_delay_default(api: Api, clock: ManualClock) -> None:
    set_defaults(api, {"mail": {"delayMs": 60_000}})
    at = clock.now_ms() + 5_000
    assert job(api, api.created(SPACE, "mail", runAtMs=at))["runAtMs"] == at
    assert job(api, api.created(SPACE, "mail", delayMs=0))["runAtMs"] == clock.now_ms()


def test_a_delayed_default_holds_the_job_back_from_claims(api: Api, clock: ManualClock) -> None:
    set_defaults(api, {"mail": {"delayMs": 60_000}})
    api.created(SPACE, "mail")
    assert api.claimed(SPACE) == []
    clock.advance(60_000)
    assert len(api.claimed(SPACE)) == 1


def test_a_batch_fills_each_job_from_its_own_name(api: Api) -> None:
    set_defaults(api, {"a": {"priority": 1}, "b": {"priority": -1}})
    answer = api.post(JOBS, {"jobs": [{"name": "a"}, {"name": "b"}, {"name": "a", "priority": 5}]})
    assert answer.status == 200, answer
    got = [job(api, j["id"])["priority"] for j in answer.body["jobs"]]
    assert got == [1, -1, 5]


def test_the_space_shows_defaults_and_a_patch_merges_them(api: Api) -> None:
    assert set_defaults(api, {"mail": {"priority": 3, "maxAttempts": 2}}) == {
        "mail": {"priority": 3, "maxAttempts": 2}
    }
    merged = set_defaults(api, {"mail": {"maxAttempts": None, "timeoutMs": 2_000}, "sms": {"priority": -4}})
    assert merged == {"mail": {"priority": 3, "timeoutMs": 2_000}, "sms": {"priority": -4}}
    assert api.get(SPACE).body["jobDefaults"] == merged
    assert set_defaults(api, {"mail": None}) == {"sms": {"priority": -4}}, "a name given null loses them"
    assert set_defaults(api, None) == {}, "jobDefaults: null clears every name's"
    assert job(api, api.created(SPACE, "sms"))["priority"] == 0
    assert api.patch(SPACE, {"maxEvents": 5}).body["jobDefaults"] == {}


def test_a_changed_default_applies_to_the_next_create(api: Api) -> None:
    set_defaults(api, {"mail": {"priority": 3}})
    assert job(api, api.created(SPACE, "mail"))["priority"] == 3
    set_defaults(api, {"mail": {"priority": 4}})
    assert job(api, api.created(SPACE, "mail"))["priority"] == 4


def test_defaults_for_fields_other_scopes_add_are_accepted(api: Api) -> None:
    """`guarantee` and `expiresInMs` are kept and shown even before the create knows them."""
    shown = set_defaults(api, {"once": {"guarantee": "AT_MOST_ONCE", "expiresInMs": 60_000}})
    assert shown == {"once": {"guarantee": "AT_MOST_ONCE", "expiresInMs": 60_000}}
    assert api.post(JOBS, {"name": "once"}).status == 200


@pytest.mark.parametrize(
    ("defaults", "message"),
    [
        ({"mail": {"priority": 1_001}}, "jobDefaults.mail.priority: must be at most 1000"),
        ({"mail": {"timeoutMs": 999}}, "jobDefaults.mail.timeoutMs: must be at least 1000"),
        ({"mail": {"delayMs": 31_536_000_001}}, "jobDefaults.mail.delayMs: must be at most 31536000000"),
        ({"mail": {"guarantee": "ONCE"}}, "jobDefaults.mail.guarantee: must be one of"),
        ({"mail": {"backoff": {"kind": "fast"}}}, "jobDefaults.mail.backoff.kind: must be one of"),
        ({"mail": {"payload": 1}}, "jobDefaults.mail.payload: is not a known field"),
        ({"mail": {"expiresInMs": 0}}, "jobDefaults.mail.expiresInMs: must be at least 1"),
        ({"mail": 5}, "jobDefaults.mail: must be an object"),
        ({"bad name": {}}, "jobDefaults"),
        ({f"n{i}": {} for i in range(101)}, "jobDefaults: must have at most 100 items"),
    ],
)
def test_bad_defaults_are_a_400_naming_the_field(api: Api, defaults: Any, message: str) -> None:
    answer = api.patch(SPACE, {"jobDefaults": defaults})
    assert answer.status == 400, answer
    assert answer.body["message"].startswith(message), answer.body["message"]


def test_defaults_schema_keeps_the_job_fields_bounds() -> None:
    """A default is always a value the creator could have sent: every field both models
    have carries the same rule (this catches a bound changed on one side only)."""
    jobs = NewJob.model_json_schema()
    defaults = JobDefaultsSpec.model_json_schema()
    common = set(JobDefaultsSpec.model_fields) & set(NewJob.model_fields)
    assert {
        "priority",
        "maxAttempts",
        "timeoutMs",
        "backoffMs",
        "backoff",
        "concurrencyKey",
        "delayMs",
    } <= common
    for name in common:
        ours, theirs = dict(defaults["properties"][name]), dict(jobs["properties"][name])
        for schema in (ours, theirs):
            schema.pop("default", None)
            schema.pop("description", None)
            schema.pop("title", None)
        assert _without_null(ours) == _without_null(theirs), name


def _without_null(schema: dict[str, Any]) -> Any:
    options = schema.get("anyOf", [schema])
    return [o for o in options if o != {"type": "null"}]


def test_notification_jobs_can_skip_the_defaults(rt: Runtime, api: Api) -> None:
    """The seam scope D uses: `create(..., apply_defaults=False)`."""
    set_defaults(api, {"mail": {"priority": 9}})
    (made,) = create(rt.context, "defaults", [NewJob(name="mail")], batch=False, apply_defaults=False)
    assert job(api, made.id)["priority"] == 0


def test_an_empty_backoff_default_sets_nothing(api: Api) -> None:
    assert set_defaults(api, {"mail": {"backoff": {}, "priority": 1}}) == {"mail": {"priority": 1}}
    assert job(api, api.created(SPACE, "mail"))["backoff"]["kind"] == "exponential"


def test_defaults_no_create_could_satisfy_are_refused_at_patch_naming_the_default(api: Api) -> None:
    """`delayMs` a year with `expiresInMs` 1 s: every plain create of the name would be a 400
    naming a field its creator never sent. Refused when set instead, also when the PATCH
    adds one half to a stored other half; nothing of the PATCH is kept."""
    refused = api.patch(SPACE, {"jobDefaults": {"mail": {"delayMs": 31_536_000_000, "expiresInMs": 1_000}}})
    assert refused.status == 400 and refused.body["message"].startswith(
        "jobDefaults.mail.expiresInMs: must be more than jobDefaults.mail.delayMs (31536000000)"
    ), refused
    set_defaults(api, {"mail": {"delayMs": 60_000}})
    half = api.patch(SPACE, {"jobDefaults": {"mail": {"expiresInMs": 60_000}, "other": {"priority": 1}}})
    assert half.status == 400 and half.body["message"].startswith("jobDefaults.mail.expiresInMs:"), half
    assert set_defaults(api, {"mail": {"expiresInMs": 60_001}}) == {
        "mail": {"delayMs": 60_000, "expiresInMs": 60_001}
    }, "the refused PATCH kept nothing; a satisfiable one is kept"
    api.created(SPACE, "mail")


def test_a_create_refused_for_a_default_says_it_came_from_jobdefaults(api: Api) -> None:
    set_defaults(api, {"mail": {"delayMs": 60_000}})
    answer = api.post(JOBS, {"name": "mail", "expiresInMs": 1_000})
    assert answer.status == 400
    assert answer.body["message"].startswith("expiresInMs: must be later than the job can first run")
    assert answer.body["message"].endswith("(jobDefaults.mail.delayMs for its name)"), answer
