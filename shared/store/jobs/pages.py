"""What the read use cases ask of the job store, in domain values: a page of the space's
jobs with where the next starts, a job as its follower sees it with a version of that,
and where a name's counted limits stand (its slots and rate, a key's).

The version is computed here, from the job item as read, so that it changes whenever
anything a follower is shown changes, with nothing stored to keep it; what it digests
is the store's to know (`version`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from shared.job import Job, JobStatus
from shared.store import keys
from shared.store.codec import job_from_item, purged
from shared.store.dynamo import Item
from shared.store.jobs.parts import Parts

OUTCOMES = {JobStatus.COMPLETED: "result", JobStatus.FAILED: "error", JobStatus.STALLED: "error"}
"""The value a follower is shown of a finished job, by its status."""


@dataclass(frozen=True)
class JobPage:
    """Jobs newest first, without payloads, results or errors read."""

    jobs: list[Job]
    cursor: str | None
    """Where the next page starts (the last job's id; None: this is the last page)."""


@dataclass(frozen=True)
class Watched:
    """A job as a follower sees it (`JobStore.watched`)."""

    job: Job
    """Without payload; with its result (completed) or error (failed, stalled) if `outcome`."""
    version: str
    """A digest of what a follower is shown: it differs whenever there is news."""
    outcome: bool = True
    """False: a finished job's result or error was left unread (its version was the one
    the follower had)."""


class Pages(Parts):
    def jobs_page(
        self,
        space: str,
        *,
        before: str | None,
        limit: int,
        status: JobStatus | None,
        name: str | None,
        now_ms: int,
    ) -> JobPage:
        """Up to `limit` of the space's jobs newest first, ids below `before`, `name`'s and in
        `status` only if given; one past its retention and not removed yet is left out.

        One job more than the page is read, to know whether another page follows: the
        items come with the listing's reads (`shared.store.listing`), nothing reads them again."""
        found: list[Item] = []
        items = self.listing.newest(
            space, before=before, want=limit + 1, name=name, status=status.value if status else None
        )
        for item in items:
            if purged(item, now_ms):
                continue
            found.append(item)
            if len(found) > limit:
                break
        shown = found[:limit]
        cursor = shown[-1]["sk"] if len(found) > limit else None
        return JobPage([job_from_item(space, item) for item in shown], cursor)

    def watched(self, space: str, job_id: str, *, now_ms: int, seen: str | None = None) -> Watched | None:
        """The job as its follower sees it, and the version of that; None: there is none, or
        it is past its retention at `now_ms`.

        Read eventually consistent (half a read unit; a job made a moment ago is read again
        strongly). A finished job comes with its result or error, read from wherever it
        lives, unless its version is `seen`: a follower waiting on the version it has reads
        only the job item, however large the value."""
        key = keys.job(space, job_id)
        item = self.db.get(key, consistent=False) or self.db.get(key, consistent=True)
        if item is None or purged(item, now_ms):
            return None
        current = version(item)
        job = job_from_item(space, item)
        outcome = OUTCOMES.get(job.status)
        if outcome is None:
            return Watched(job, current)
        if current == seen:
            return Watched(job, current, outcome=False)
        (raw,) = self.blobs.read_many(space, [(item, outcome)])
        if outcome == "result":
            return Watched(job_from_item(space, item, result=_parsed(raw)), current)
        return Watched(job_from_item(space, item, error=raw.decode() if raw is not None else None), current)

    # -- a name's counted limits -------------------------------------------------------

    def running(self, space: str, name: str) -> int:
        """The name's jobs running now, by the slots held (strongly consistent): counted
        only under a `concurrency`, so meaningful only for a name that has one."""
        return sum(self.counters.running(space, name))

    def rate_until(self, space: str, name: str, *, tokens: int, interval_ms: int, now_ms: int) -> int | None:
        """When the name's rate (`tokens` per `interval_ms`) next allows a hand-out, if it
        allows none now (None: it does)."""
        return self.counters.rate_until(space, name, tokens, interval_ms, now_ms)

    def key_running(self, space: str, name: str, key: str) -> int:
        """The jobs of the name's concurrency key `key` running now (strongly consistent)."""
        return self.key_entries.running(space, name, key)

    def key_rate_until(
        self, space: str, name: str, key: str, *, tokens: int, interval_ms: int, now_ms: int
    ) -> int | None:
        """When the key's `perKeyRate` next allows a hand-out, if it allows none now."""
        return self.key_entries.rate_until(space, name, key, (tokens, interval_ms), now_ms)


def version(item: Item) -> str:
    """What a follower sees of the job (status, attempt, progress, finish, line count),
    digested: it differs whenever there is news."""
    seen = [
        item["status"],
        item["attempt"],
        item.get("progress"),
        item.get("finishedAtMs"),
        item.get("lineCount", 0),
    ]
    return hashlib.sha256(json.dumps(seen, default=str, sort_keys=True).encode()).hexdigest()[:16]


def _parsed(raw: bytes | None) -> Any:
    return None if raw is None else json.loads(raw)
