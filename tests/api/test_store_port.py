"""The job store's port (`shared.store.port`): jobs and keys' holders come out as domain
values, a refused transition carries the job as it stood, a payload goes in as bytes."""

from __future__ import annotations

import json
import random

import pytest

from shared.clock import ManualClock
from shared.job import JobStatus, place
from shared.machine import claim
from shared.runtime import Runtime
from shared.store.dynamo import ConditionFailed
from shared.store.port import JobConflict, KeyHolder, NewRecord
from tests.support import Api

SPACE = "port"
JOBS = f"/v1/spaces/{SPACE}/jobs"
MINUTE = 60_000


def test_a_job_comes_out_as_a_job_and_an_unknown_one_as_none(api: Api, rt: Runtime) -> None:
    job_id = api.created(f"/v1/spaces/{SPACE}", "n", payload={"x": 1})
    now = rt.clock.now_ms()
    job = rt.jobs.job(SPACE, job_id, now_ms=now, bodies=True)
    assert job is not None and (job.id, job.status, job.payload) == (job_id, JobStatus.PENDING, {"x": 1})
    assert rt.jobs.job(SPACE, "01J00000000000000000000000", now_ms=now) is None


def test_a_refused_transition_carries_the_job_as_it_stood(api: Api, rt: Runtime) -> None:
    job_id = api.created(f"/v1/spaces/{SPACE}", "n")
    assert api.claimed(f"/v1/spaces/{SPACE}") == [job_id]
    again = claim(attempt_before=0, now_ms=rt.clock.now_ms(), lease_ms=MINUTE)
    with pytest.raises(JobConflict) as refused:
        rt.jobs.apply(SPACE, job_id, again)
    current = refused.value.current
    assert current is not None and (current.status, current.attempt) == (JobStatus.RUNNING, 1)
    assert isinstance(refused.value, ConditionFailed), "callers catching ConditionFailed still do"


def test_a_keys_holder_is_its_jobs_id_status_and_finish(api: Api, rt: Runtime, clock: ManualClock) -> None:
    job_id = api.created(f"/v1/spaces/{SPACE}", "n", key="once")
    assert rt.jobs.holder(SPACE, "once") == KeyHolder(job_id, JobStatus.PENDING, None)
    assert rt.jobs.holder(SPACE, "never") is None
    api.claimed(f"/v1/spaces/{SPACE}")
    answer = api.post(f"{JOBS}:report", {"id": job_id, "attempt": 1, "complete": {"result": None}})
    assert answer.status == 200
    holder = rt.jobs.holder(SPACE, "once")
    assert holder is not None and holder.status == JobStatus.COMPLETED
    assert holder.finished_at_ms == clock.now_ms()


@pytest.mark.parametrize(
    ("holder", "released"),
    [
        (KeyHolder("j", JobStatus.RUNNING, None), False),
        (KeyHolder("j", JobStatus.COMPLETED, 1_000), False),
        (KeyHolder("j", JobStatus.COMPLETED, 500), True),
        (KeyHolder("j", None, None), False),
        (KeyHolder("j", None, 500), True),
    ],
    ids=["unfinished", "finished-within-window", "finished-past-window", "removed-unknown", "removed-past"],
)
def test_a_key_is_released_a_window_after_its_job_finished(holder: KeyHolder, released: bool) -> None:
    """Held while its job runs and for the window after it finished; a removed job's key
    only once the stream copied the finish onto the key (until then, held)."""
    assert holder.released(key_window_ms=500, now_ms=1_000) is released


def test_a_payload_goes_in_as_bytes_and_the_store_packs_it_as_a_create_does(api: Api, rt: Runtime) -> None:
    """In the job item while it fits, compressed or beside it when not."""
    now = rt.clock.now_ms()
    job_id = api.created(f"/v1/spaces/{SPACE}", "n", payload={"x": 1})
    job = rt.jobs.job(SPACE, job_id, now_ms=now)
    item = rt.jobs.get_item(SPACE, job_id)
    assert job is not None and item is not None
    at = place(ready_at_ms=now, now_ms=now, priority=0, aging_ms=MINUTE)
    small = NewRecord.packing(SPACE, job, b'{"x":1}', at)
    assert small.payload.attributes == {"payload": item["payload"]} and small.payload.size == 7
    raw = json.dumps(random.Random(1).randbytes(2_000).hex()).encode()
    large = NewRecord.packing(SPACE, job, raw, at)
    assert large.payload.side_item is not None and large.payload.attributes == {"payloadRef": "item"}
