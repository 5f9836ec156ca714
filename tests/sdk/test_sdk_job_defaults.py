"""The SDK's helpers for defaults per job name, against `emit dev`."""

from __future__ import annotations

from datetime import timedelta

from emit import Backoff, Emit, JobDefaults


def test_set_read_and_clear_a_names_defaults(client: Emit) -> None:
    wanted = JobDefaults(
        priority=5,
        max_attempts=9,
        backoff=Backoff(kind="linear", max=timedelta(seconds=4)),
        guarantee="at_most_once",
        concurrency_key="smtp",
        delay=0,
    )
    assert client.spaces.set_job_defaults("mail", wanted) == wanted
    assert client.spaces.job_defaults() == {"mail": wanted}
    job = client.jobs.get(client.jobs.create("mail").id)
    assert (job.priority, job.max_attempts, job.concurrency_key) == (5, 9, "smtp")
    assert job.raw["backoff"] == {"kind": "linear", "maxMs": 4_000, "jitter": False}
    own = client.jobs.get(client.jobs.create("mail", priority=-1, max_attempts=2).id)
    assert (own.priority, own.max_attempts) == (-1, 2), "what the creator sends wins"

    smaller = JobDefaults(max_attempts=3)
    assert client.spaces.set_job_defaults("mail", smaller) == smaller, "set replaces, not merges"
    client.spaces.set_job_defaults("sms", JobDefaults(priority=1))
    client.spaces.clear_job_defaults("mail")
    assert client.spaces.job_defaults() == {"sms": JobDefaults(priority=1)}
    client.spaces.clear_job_defaults()
    assert client.spaces.job_defaults() == {}


def test_update_sends_values_with_a_to_api_as_that(client: Emit) -> None:
    """The seam for settings with a shape of their own (a backoff; notifications' specs)."""
    settings = client.spaces.update(
        backoff=Backoff(kind="constant"), job_defaults={"a": JobDefaults(priority=2)}
    )
    assert settings.backoff.kind == "constant"
    assert settings.job_defaults == {"a": JobDefaults(priority=2)}
    assert settings.raw["jobDefaults"] == {"a": {"priority": 2}}
