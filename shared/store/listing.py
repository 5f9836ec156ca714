"""A space's jobs newest first, from the table's own job partitions.

A space's job items are spread over `keys.JOB_SHARDS` partitions by a hash of the id
(`keys.job`), each sorted by id, and ids sort by creation: so each partition read
backwards is its jobs newest first, and the list of a space merges them. No index is
kept for it (an index entry would cost a write unit a job at create and one at removal),
and the page's items come with the reads, so nothing reads them again after.

A page reads every partition once first, side by side, a few items each, then reads a
partition further only when the merge has taken all it read there: a page costs little
more than its own items and one small read a partition. Reads are strongly consistent: a
job created or changed a moment ago is listed as it is now.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from shared.store import keys
from shared.store.dynamo import Dynamo, Item

READ_THREADS = 8
"""Partitions read at once for a page's first look (a Lambda's few threads, not more)."""
FIRST_SLACK = 1
"""A page's first read of each partition asks for its even share of the page and this many
more. A read costs the size of what it reads rounded up to 4 KB (a unit), per read: two job
items of a 1 KB payload cost what one does, while asking for more would pay, in each of the
64 partitions, for items the page seldom takes (jobs spread by crc32 are near even, so
only a few partitions hold more than their share and are read again)."""
MAX_READ = 1000
"""The most items one further read of a partition asks for (each read doubles it)."""


class Listing:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def newest(
        self, space: str, *, before: str | None, want: int, name: str | None, status: str | None
    ) -> Iterator[Item]:
        """Job items newest first, ids below `before`, `name`'s and in `status` only if given;
        `want` is how many the caller expects to take (it may take more: partitions are
        read further as the merge needs them)."""
        queries = [_Query(p, before, name, status) for p in keys.job_partitions(space)]
        first = math.ceil(want / len(queries)) + FIRST_SLACK
        with ThreadPoolExecutor(READ_THREADS, thread_name_prefix="emit-listing") as pool:
            pages = list(pool.map(lambda q: self._read(q, first, None), queries))
        streams = [self._stream(q, first, page) for q, page in zip(queries, pages, strict=True)]
        return heapq.merge(*streams, key=lambda row: str(row["sk"]), reverse=True)

    def _stream(self, query: _Query, limit: int, page: _Page) -> Iterator[Item]:
        rows, start = page
        yield from rows
        while start is not None:
            limit = min(limit * 2, MAX_READ)
            rows, start = self._read(query, limit, start)
            yield from rows

    def _read(self, query: _Query, limit: int, start: dict[str, Any] | None) -> _Page:
        condition = "pk = :pk AND sk < :before" if query.before else "pk = :pk"
        vals: dict[str, Any] = {":pk": query.partition} | ({":before": query.before} if query.before else {})
        names: dict[str, str] = {}
        filters = []
        if query.name is not None:
            names["#name"] = "name"
            vals[":name"] = query.name
            filters.append("#name = :name")
        if query.status is not None:
            names["#status"] = "status"
            vals[":status"] = query.status
            filters.append("#status = :status")
        return self.db.query(
            condition,
            names=names or None,
            vals=vals,
            forward=False,
            limit=limit,
            consistent=True,
            start=start,
            filter_expression=" AND ".join(filters) or None,
        )


@dataclass(frozen=True)
class _Query:
    """What a page asks of one partition."""

    partition: str
    before: str | None
    name: str | None
    status: str | None


_Page = tuple[list[Item], dict[str, Any] | None]
