"""Job items with no hot key: a space's jobs spread over its 64 job partitions, the list
merged from those partitions themselves (no index), through the handlers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store import keys
from tests.support import Api

JOBS = "/v1/spaces/work/jobs"


def create_many(api: Api, clock: ManualClock, count: int, **fields: Any) -> list[str]:
    """`count` jobs, in batches a millisecond apart (so some share a millisecond)."""
    ids: list[str] = []
    while len(ids) < count:
        batch = [{"name": "n", **fields} for _ in range(min(40, count - len(ids)))]
        ids += [j["id"] for j in api.post(JOBS, batch).body["jobs"]]
        clock.advance(1)
    return ids


def job_items(rt: Runtime) -> list[dict[str, Any]]:
    return rt.dynamodb.scan(
        TableName=rt.table,
        FilterExpression="begins_with(pk, :j)",
        ExpressionAttributeValues={":j": {"S": "J#"}},
    )["Items"]


def test_jobs_spread_over_the_space_s_job_partitions(rt: Runtime, api: Api, clock: ManualClock) -> None:
    """A busy space writes its jobs' transitions over its 64 job partitions, by a hash of the
    id: no key of the table is one every job of the space writes, and no index is kept for
    the list (an entry a job would cost a write unit at create and one at removal)."""
    ids = create_many(api, clock, 60)
    items = job_items(rt)
    assert sorted((i["pk"]["S"], i["sk"]["S"]) for i in items) == sorted(
        (keys.job("work", i)["pk"], i) for i in ids
    )
    assert {i["pk"]["S"] for i in items} <= set(keys.job_partitions("work"))
    assert len(keys.job_partitions("work")) == keys.JOB_SHARDS == 64
    assert Counter(i["pk"]["S"] for i in items).most_common(1)[0][1] < 10, "spread by id"
    assert not any("lpk" in i for i in items)
    indexes = rt.dynamodb.describe_table(TableName=rt.table)["Table"]["GlobalSecondaryIndexes"]
    assert [i["IndexName"] for i in indexes] == ["ready"]
    # Found by id alone, as before: get, claim, report, cancel.
    claimed = api.post(f"{JOBS}:claim", {"count": 2}).body["jobs"]
    api.post(f"{JOBS}:report", {"id": claimed[0]["id"], "attempt": 1, "complete": {"result": {"ok": 1}}})
    api.post(f"{JOBS}:cancel", [ids[-1]])
    assert api.get(f"{JOBS}/{claimed[0]['id']}").body["result"] == {"ok": 1}
    assert api.get(f"{JOBS}/{claimed[1]['id']}").body["status"] == "RUNNING"
    assert api.get(f"{JOBS}/{ids[-1]}").body["status"] == "CANCELLED"


@pytest.mark.parametrize(("jobs", "limit"), [(30, 1), (150, 7), (150, 100)])
def test_pages_walk_every_job_newest_first(api: Api, clock: ManualClock, jobs: int, limit: int) -> None:
    ids = create_many(api, clock, jobs)
    seen: list[str] = []
    cursor = None
    while True:
        page = api.get(JOBS, query={"limit": limit} | ({"cursor": cursor} if cursor else {})).body
        assert len(page["jobs"]) <= limit
        seen += [j["id"] for j in page["jobs"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert seen == sorted(ids, reverse=True)


def test_filters_hold_across_partitions_and_pages(api: Api, clock: ManualClock) -> None:
    evens = create_many(api, clock, 45, delayMs=60_000)
    odds = create_many(api, clock, 45)
    late = [j["id"] for j in api.post(JOBS, [{"name": "late"} for _ in range(30)]).body["jobs"]]
    cancelled = evens[::3]
    api.post(f"{JOBS}:cancel", cancelled)

    def walk(query: dict[str, Any]) -> list[str]:
        seen: list[str] = []
        cursor = None
        while True:
            page = api.get(JOBS, query=query | {"limit": 10} | ({"cursor": cursor} if cursor else {})).body
            seen += [j["id"] for j in page["jobs"]]
            if (cursor := page["cursor"]) is None:
                return seen

    assert walk({"name": "late"}) == sorted(late, reverse=True)
    assert walk({"status": "CANCELLED"}) == sorted(cancelled, reverse=True)
    pending_n = [i for i in evens + odds if i not in cancelled]
    assert walk({"status": "PENDING", "name": "n"}) == sorted(pending_n, reverse=True)


@pytest.mark.parametrize(("limit", "first_read"), [(50, 2), (100, 3)])
def test_a_page_reads_little_more_than_itself(
    rt: Runtime, api: Api, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, limit: int, first_read: int
) -> None:
    """A page reads each of the space's job partitions once first, a small read (a read's
    units are its size rounded up to 4 KB: two items cost what one does), and again only the
    few the merge takes more from; the items come with those reads, nothing reads them after,
    and as they are now (strongly consistent)."""
    create_many(api, clock, 1_000)
    reads = Reads(rt.db.client)
    monkeypatch.setattr(rt.db, "client", reads)
    page = api.get(JOBS, query={"limit": limit}).body
    assert len(page["jobs"]) == limit and page["cursor"]
    first, further = reads.limits[: keys.JOB_SHARDS], reads.limits[keys.JOB_SHARDS :]
    assert sorted(reads.partitions[: keys.JOB_SHARDS]) == sorted(keys.job_partitions("work"))
    assert first == [first_read] * keys.JOB_SHARDS, "the first read of each partition is small"
    assert len(further) <= keys.JOB_SHARDS // 2, further
    assert reads.items <= 4 * (limit + 1)
    assert reads.consistent and reads.batch_gets == 0


class Reads:
    """A client that counts the queries of the space's job partitions: each one's limit and
    partition, and the items they read."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.limits: list[int] = []
        self.partitions: list[str] = []
        self.items = 0
        self.consistent = True
        self.batch_gets = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def query(self, **params: Any) -> Any:
        answer = self._client.query(**params)
        partition = params["ExpressionAttributeValues"].get(":pk", {}).get("S", "")
        if "IndexName" not in params and partition.startswith("J#"):
            self.limits.append(params["Limit"])
            self.partitions.append(partition)
            self.items += answer["ScannedCount"]
            self.consistent &= bool(params.get("ConsistentRead"))
        return answer

    def batch_get_item(self, **params: Any) -> Any:
        self.batch_gets += 1
        return self._client.batch_get_item(**params)
