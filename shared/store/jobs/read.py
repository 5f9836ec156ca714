"""Reads: job items by id, a space's jobs newest first, a name's pending jobs (unclaimed,
census), idempotency keys' holders and retry marks; and `forget`, what retention removes
beside a job's item. The clock, the stream and the callback sender read jobs as `Job`s and
`Snapshot`s (`shared.store.images`), whose bodies are read later, or never."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from shared import limits
from shared.job import MAX_PRIORITY, Job, hand_out_order
from shared.store import keys
from shared.store.codec import job_from_item, purged, ttl_seconds
from shared.store.dynamo import ConditionFailed, Item
from shared.store.images import Snapshot
from shared.store.jobs.parts import Parts
from shared.store.jobs.records import Census, KeyHolder, Waiting
from shared.store.table import READY_INDEX, TTL_ATTRIBUTE


class Reads(Parts):
    def retries(self, space: str, job_ids: list[str]) -> dict[str, str]:
        """The jobs already made by retrying each of `job_ids` (old id -> new id), from
        their retry marks."""
        rows = self.db.batch_get([keys.retry_marker(space, i) for i in dict.fromkeys(job_ids)])
        return {row["pk"].rsplit("#", 1)[1]: row["jobId"] for row in rows}

    def job(self, space: str, job_id: str, *, now_ms: int, bodies: bool = False) -> Job | None:
        """The job (with its payload, result and error if `bodies`); None: there is none, or
        it is past its retention at `now_ms` and not removed yet."""
        item = self.get_item(space, job_id)
        if item is None or purged(item, now_ms):
            return None
        return self.load(space, item, bodies=bodies)

    def holder(self, space: str, key: str) -> KeyHolder | None:
        """The job holding the idempotency key `key`, if any (released or not: the caller
        decides, `KeyHolder.released`)."""
        held = self.db.get(keys.idempotency_key(space, key))
        return KeyHolder.of(held, self.db.get(keys.job(space, held["jobId"]))) if held else None

    def items(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Item]:
        rows = self.db.batch_get([keys.job(space, i) for i in dict.fromkeys(job_ids)], consistent=consistent)
        return {row["sk"]: row for row in rows}

    def unclaimed(
        self,
        space: str,
        name: str,
        ready_by_ms: int,
        aging_ms: int,
        limit: int,
        *,
        reach: int = keys.READY_SHARDS,
    ) -> list[Waiting]:
        """Pending jobs of `name` claimable since `ready_by_ms` or earlier, up to `limit`.

        Later jobs are read by their ready time: every entry up to the bound qualifies.
        Due jobs are kept by order of hand-out, and a job ready by `ready_by_ms` has an
        order of at most that of a job of the lowest priority ready then (under the name's
        aging interval `aging_ms`): the lane is read up to there, and the filter keeps those
        ready in time. So a look reads, besides what it finds, the due jobs that became
        claimable up to 1,000 aging intervals after the bound (about 17 hours at the
        default minute); under strict priority, the whole due lane. A job placed under a
        longer interval than today's, with a negative priority, can lie past the bound.

        A key listed in these lanes has room: its own lane is read the same way (a key at
        its limit is not listed, and its jobs wait on it, not for a worker)."""
        found: list[Item] = []
        lowest = hand_out_order(ready_at_ms=ready_by_ms, priority=-MAX_PRIORITY, aging_ms=aging_ms)
        lanes: tuple[tuple[str, str, str | None], ...] = (
            (keys.LATER, keys.later_bound(ready_by_ms), None),
            (keys.DUE, keys.due_bound(lowest), "readyAtMs <= :by"),
        )
        partitions = keys.ready_partitions(space, name, reach)
        while partitions and len(found) < limit:
            partition = partitions.pop(0)
            for lane in lanes:
                jobs, entries = self._lane(partition, lane, ready_by_ms, limit - len(found))
                found += jobs
                partitions += [
                    keys.key_lane(space, name, str(r["concurrencyKey"]))
                    for r in entries
                    if r.get("concurrencyKey") is not None
                ]
        return [Waiting(str(r["sk"]), r.get("concurrencyKey")) for r in found[:limit]]

    def _lane(
        self, partition: str, lane: tuple[str, str, str | None], ready_by_ms: int, want: int
    ) -> tuple[list[Item], list[Item]]:
        """Up to `want` jobs of one lane (first, last, filter) of `partition`, and the keys'
        entries read among them."""
        first, last, filter_expression = lane
        jobs: list[Item] = []
        entries: list[Item] = []
        start = None
        while len(jobs) < want:
            rows, start = self.db.query(
                "gpk = :p AND gsk BETWEEN :lo AND :hi",
                vals={":p": partition, ":lo": first, ":hi": last}
                | ({":by": ready_by_ms} if filter_expression else {}),
                index=READY_INDEX,
                limit=want - len(jobs),
                start=start,
                filter_expression=filter_expression,
            )
            jobs += [r for r in rows if not keys.is_key_entry(r)]
            entries += [r for r in rows if keys.is_key_entry(r)]
            if start is None:
                break
        return jobs, entries

    def census(
        self, space: str, name: str, now_ms: int, cap: int, *, reach: int = keys.READY_SHARDS
    ) -> Census:
        """Count the pending jobs of `name` from its ready shards in `reach`, and the lanes of
        the keys listed there (a key at its limit is not listed: its jobs are not counted),
        up to `cap` entries.

        Reads every entry it counts (a count query is billed the same), in pages of up to
        1 MB of the index: some 250 bytes an entry, so 10,000 entries cost about 300 read
        units. The index is eventually consistent: counts may lag writes by a second."""
        census = Census()
        lanes = keys.ready_partitions(space, name, reach)
        while lanes and census.pending < cap:
            partition = lanes.pop(0)
            start = None
            while census.pending < cap:
                rows, start = self.db.query(
                    "gpk = :p",
                    vals={":p": partition},
                    index=READY_INDEX,
                    limit=cap - census.pending,
                    start=start,
                )
                for row in rows:
                    if not keys.is_key_entry(row):
                        census.count(row, now_ms)
                    elif row.get("concurrencyKey") is not None:
                        # A listed key's jobs wait in its own lane: counted from there.
                        lanes.append(keys.key_lane(space, name, str(row["concurrencyKey"])))
                if start is None:
                    break
        census.capped = census.pending >= cap
        return census

    def forget(self, space: str, job_id: str, item: Item) -> None:
        """Delete what belonged to a job that retention removed: its lines, events and stored
        values. Its idempotency key stays held for the key window after the job finished
        (retention may be shorter): the key item keeps the finish time, and its own TTL
        removes it once no key window can reach (unless another job holds it now).

        What the job never had is not looked for: its counts say whether it had lines or
        events (each count is raised by the write that precedes what it counts), so most
        jobs cost no query here."""
        had = [
            pk
            for pk, count in (
                (keys.lines(space, job_id), "lineCount"),
                (keys.events(space, job_id), "eventCount"),
            )
            if int(item.get(count) or 0) > 0
        ]
        for pk in had:
            start = None
            while True:
                rows, start = self.db.query("pk = :pk", vals={":pk": pk}, start=start, consistent=True)
                self.db.batch_delete({"pk": r["pk"], "sk": r["sk"]} for r in rows)
                if start is None:
                    break
        self.blobs.delete(space, job_id, item)
        if item.get("key") is not None:
            finished = int(item.get("finishedAtMs") or 0)
            with contextlib.suppress(ConditionFailed):
                self.db.update(
                    keys.idempotency_key(space, item["key"]),
                    "SET finishedAtMs = :finished, #ttl = :ttl",
                    condition="jobId = :id",
                    names={"#ttl": TTL_ATTRIBUTE},
                    vals={
                        ":id": job_id,
                        ":finished": finished,
                        ":ttl": ttl_seconds(finished + limits.MAX_KEY_WINDOW_MS),
                    },
                )

    def get_item(self, space: str, job_id: str) -> Item | None:
        return self.db.get(keys.job(space, job_id))

    def load(self, space: str, item: Item, *, bodies: bool = True, payload: bool = True) -> Job:
        """The domain job of an item, with payload, result and error read from wherever they
        live. Without `payload`, the payload is not read (a callback's body never carries it,
        and a large one lives in S3)."""
        if not bodies:
            return job_from_item(space, item)
        fields = ["payload", "result", "error"] if payload else ["result", "error"]
        found = dict(zip(fields, self.blobs.read_many(space, [(item, f) for f in fields]), strict=True))
        payload_raw, result, error = found.get("payload"), found["result"], found["error"]
        return job_from_item(
            space,
            item,
            payload=_json(payload_raw),
            result=_json(result),
            error=error.decode() if error is not None else None,
        )

    # -- the clock's, the stream's and the sender's reads: jobs and snapshots -----------

    def found(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Job]:
        """The jobs of `job_ids` there are, by id, without their bodies (past their
        retention or not: a job past it is finished, and the clock leaves it alone)."""
        return {
            job_id: job_from_item(space, item)
            for job_id, item in self.items(space, job_ids, consistent=consistent).items()
        }

    def snapshot(self, space: str, job_id: str) -> Snapshot | None:
        """The job's item as it stands now (strongly consistent), its bodies left to read."""
        item = self.get_item(space, job_id)
        return None if item is None else Snapshot(space, item)

    def snapshots(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Snapshot]:
        """The items of `job_ids` there are, by id, as snapshots (in one batched read)."""
        return {
            job_id: Snapshot(space, item)
            for job_id, item in self.items(space, job_ids, consistent=consistent).items()
        }

    def outcome(self, seen: Snapshot) -> Job:
        """The job of `seen` with its result and error, read from wherever they live, but not
        its payload: what a callback's body or a notice carries (a large payload is in S3)."""
        return self.load(seen.space, seen.item, payload=False)

    def payloads(self, space: str, seen: list[Snapshot]) -> list[bytes | None]:
        """The stored payload of each job of `seen` (UTF-8 JSON), in one batched read of
        those kept outside their items."""
        return self.blobs.read_many(space, [(s.item, "payload") for s in seen])

    def forget_removed(self, removed: Snapshot) -> None:
        """`forget` a job retention removed, from its item as it was then (the removal's record)."""
        self.forget(removed.space, str(removed.item["sk"]), removed.item)


def _json(raw: bytes | None) -> Any:
    return None if raw is None else json.loads(raw)
