"""The job item, written on every transition, stays within one write unit (1 KB) for a job
whose payload the store keeps inside it: what a transition adds (lease and finish times,
retention, a short progress, a small result, the attempt's record) fits the room that the
payload's budget (`shared.store.blobs.ITEM_BUDGET`) leaves."""

from __future__ import annotations

import random
import string
from typing import Any

from bench.capacity import item_size
from shared.runtime import Runtime
from shared.store import dynamo, keys
from shared.store.blobs import RESULT_ROOM
from tests.support import Api

SPACE = "sizes"
JOBS = f"/v1/spaces/{SPACE}/jobs"


def stored(rt: Runtime, job_id: str) -> dict[str, Any]:
    key = dynamo.serialize(keys.job(SPACE, job_id))
    return dict(rt.db.client.get_item(TableName=rt.db.table, Key=key, ConsistentRead=True)["Item"])


def text(rand: random.Random, n: int) -> str:
    """Letters and digits at random: compressed, about three quarters of their length."""
    return "".join(rand.choices(string.ascii_letters + string.digits, k=n))


def test_a_job_with_the_largest_payload_kept_inside_stays_within_one_write_unit(
    rt: Runtime, api: Api
) -> None:
    rand = random.Random(7)
    inside, outside = 100, 4_000
    while outside - inside > 1:  # the longest payload the store keeps in the job's item
        size = (inside + outside) // 2
        job_id = api.post(JOBS, {"name": "probe", "payload": text(rand, size)}).body["id"]
        item = stored(rt, job_id)
        inside, outside = (size, outside) if "payloadRef" not in item else (inside, size)
    job_id = api.post(JOBS, {"name": "n", "payload": text(rand, inside)}).body["id"]
    created = stored(rt, job_id)
    assert "payloadRef" not in created, "kept inside"
    [held] = api.post(f"{JOBS}:claim", {"count": 1, "names": ["n"]}).body["jobs"]
    assert held["id"] == job_id
    report = {"id": job_id, "attempt": 1, "progress": {"percent": 50, "message": "halfway"}}
    assert "rejection" not in api.post(f"{JOBS}:report", report).body["outcomes"][0]
    running = stored(rt, job_id)
    result = text(rand, RESULT_ROOM - 2)  # as JSON, in quotes: the most kept inside
    done = {"id": job_id, "attempt": 1, "complete": {"result": result}}
    assert "rejection" not in api.post(f"{JOBS}:report", done).body["outcomes"][0]
    completed = stored(rt, job_id)
    assert "resultRef" not in completed and "try1" in completed
    sizes = [item_size(created), item_size(running), item_size(completed)]
    assert max(sizes) <= 1024, sizes
