"""A space's jobs newest first, from the `listing` index.

Each job has its own partition in the table (`keys.job`), so nothing there holds a space's
jobs in order. The `listing` index does, spread over `keys.LIST_SHARDS` partitions per
space (one write a job at create, one at its removal: no hot key at 10,000 creates a
second). It keeps the name beside the keys and nothing that changes, so transitions never
write it. A page reads every partition newest first, a few entries each (side by side),
and merges them: each partition is read further only when the merge reaches its last
entry, so a page costs little more than the page itself.

The index is eventually consistent: on AWS a job created a moment ago may be missing from
the first page for a moment, and one removed by retention may be listed (the store drops
it when it reads the item)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from shared.store import keys
from shared.store.dynamo import Dynamo, Item
from shared.store.table import LISTING_INDEX, LISTING_PARTITION

READ_THREADS = 8
"""Partitions read at once for a page's first look (a Lambda's few threads, not more)."""
FIRST_SLACK = 2
"""A page's first read of each partition asks for twice its even share of the page and
this many more: jobs spread by crc32 are near even, so a page seldom reads any partition
twice. Entries are small (an id and a name): a read of ten costs what a read of one does."""
MAX_READ = 1000
"""The most entries one further read of a partition asks for (each read doubles it)."""


class Listing:
    def __init__(self, db: Dynamo) -> None:
        self.db = db

    def newest(self, space: str, *, before: str | None, want: int, name: str | None) -> Iterator[Item]:
        """Index entries (`sk`: the job's id, `name`) newest first, ids below `before`,
        `name`'s only if given; `want` is how many the caller expects to take (it may take
        more: partitions are read further as the merge needs them)."""
        queries = [_Query(p, before, name) for p in keys.listing_partitions(space)]
        first = 2 * math.ceil(want / len(queries)) + FIRST_SLACK
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
        condition = "#lpk = :p AND sk < :before" if query.before else "#lpk = :p"
        names = {"#lpk": LISTING_PARTITION}
        vals: dict[str, Any] = {":p": query.partition} | ({":before": query.before} if query.before else {})
        if query.name is not None:
            names["#name"] = "name"
            vals[":name"] = query.name
        return self.db.query(
            condition,
            names=names,
            vals=vals,
            index=LISTING_INDEX,
            forward=False,
            limit=limit,
            start=start,
            filter_expression="#name = :name" if query.name is not None else None,
        )


@dataclass(frozen=True)
class _Query:
    """What a page asks of one partition."""

    partition: str
    before: str | None
    name: str | None


_Page = tuple[list[Item], dict[str, Any] | None]
