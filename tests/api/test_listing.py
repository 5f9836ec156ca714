"""Job items with no hot key: each job its own partition, the list merged from the
`listing` index's partitions, through the handlers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store import keys
from shared.store.table import LISTING_INDEX
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


def test_each_job_is_an_item_of_its_own_partition(rt: Runtime, api: Api, clock: ManualClock) -> None:
    """A busy space writes each job's transitions to the job's own partition key: no key of
    the table is shared by the space's jobs (it was one of 8 before)."""
    ids = create_many(api, clock, 60)
    items = job_items(rt)
    assert sorted(i["pk"]["S"] for i in items) == sorted(f"J#work#{i}" for i in ids)
    assert Counter(i["lpk"]["S"] for i in items).most_common(1)[0][1] < 10, "listing spread by id"
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


def test_a_page_reads_little_more_than_itself(
    rt: Runtime, api: Api, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of 100 from 1,000 jobs reads each listing partition about once (a few entries
    past its share) and only the jobs it answers (and the one that tells a next page)."""
    create_many(api, clock, 1_000)
    reads = Reads(rt.db.client)
    monkeypatch.setattr(rt.db, "client", reads)
    page = api.get(JOBS, query={"limit": 100}).body
    assert len(page["jobs"]) == 100 and page["cursor"]
    assert reads.index_queries <= keys.LIST_SHARDS + 4
    assert reads.index_entries <= 4 * 101
    assert reads.items == 101


class Reads:
    """A client that counts the listing index's queries and entries and the items read."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.index_queries = 0
        self.index_entries = 0
        self.items = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def query(self, **params: Any) -> Any:
        answer = self._client.query(**params)
        if params.get("IndexName") == LISTING_INDEX:
            self.index_queries += 1
            self.index_entries += answer["ScannedCount"]
        return answer

    def batch_get_item(self, **params: Any) -> Any:
        answer = self._client.batch_get_item(**params)
        self.items += sum(len(rows) for rows in answer["Responses"].values())
        return answer
