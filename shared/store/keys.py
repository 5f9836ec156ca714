"""Item keys: the table's layout (see the package docstring) in one place."""

from __future__ import annotations

import zlib

JOB_SHARDS = 8
READY_SHARDS = 4
LEASE_SHARDS = 8


def _shard(job_id: str, shards: int) -> int:
    return zlib.crc32(job_id.encode()) % shards


def job(space: str, job_id: str) -> dict[str, str]:
    return {"pk": f"J#{space}#{_shard(job_id, JOB_SHARDS)}", "sk": job_id}


def job_partitions(space: str) -> list[str]:
    return [f"J#{space}#{n}" for n in range(JOB_SHARDS)]


def ready_partition(space: str, name: str, job_id: str) -> str:
    return f"{space}#{name}#{_shard(job_id, READY_SHARDS)}"


def ready_partitions(space: str, name: str) -> list[str]:
    return [f"{space}#{name}#{n}" for n in range(READY_SHARDS)]


def ready_sort(ready_at_ms: int, job_id: str) -> str:
    return f"{ready_at_ms:013d}#{job_id}"


# A name's ready partitions hold two lanes of pending jobs, apart by the sort key's prefix:
# due jobs (claimable now) by order of hand-out, then later jobs by ready time. `D` sorts
# before `L`, so one query up to `later_bound(now)` reads the due lane and then the later
# jobs whose time has come: an idle name costs one query per partition.
DUE = "D#"
LATER = "L#"
LANE_END = "~"
"""Sorts after every digit, letter and `#`: the end of a lane, or of a time within it."""


def due_sort(order: int, job_id: str) -> str:
    return f"{DUE}{order:016d}#{job_id}"


def due_bound(order: int) -> str:
    """Every due sort key at `order` or before is at most this."""
    return f"{DUE}{order:016d}#{LANE_END}"


def later_sort(ready_at_ms: int, job_id: str) -> str:
    return f"{LATER}{ready_at_ms:013d}#{job_id}"


def later_bound(ready_by_ms: int) -> str:
    """Every later sort key of a job ready by `ready_by_ms` is at most this."""
    return f"{LATER}{ready_by_ms:013d}#{LANE_END}"


def is_due(sort_key: str) -> bool:
    return sort_key.startswith(DUE)


def due_order(sort_key: str) -> int:
    return int(sort_key[len(DUE) : len(DUE) + 16])


def ready_upper_bound(now_ms: int) -> str:
    """Every sort key of a job ready by `now_ms` is at most this ('~' sorts after digits and letters)."""
    return f"{now_ms:013d}#~"


def blob(space: str, job_id: str, field: str) -> dict[str, str]:
    return {"pk": f"B#{space}#{job_id}", "sk": field}


def lines(space: str, job_id: str) -> str:
    return f"L#{space}#{job_id}"


def line_page(first: int) -> str:
    return f"{first:010d}"


def events(space: str, job_id: str) -> str:
    return f"E#{space}#{job_id}"


def event(seq: int) -> str:
    return f"{seq:06d}"


def idempotency_key(space: str, key: str) -> dict[str, str]:
    return {"pk": f"K#{space}#{key}", "sk": "-"}


def space(space_name: str) -> str:
    return f"S#{space_name}"


def settings(space_name: str) -> dict[str, str]:
    return {"pk": space(space_name), "sk": "settings"}


def inflight(space_name: str) -> dict[str, str]:
    return {"pk": space(space_name), "sk": "inflight"}


def slots(space_name: str, name: str, shard: int) -> dict[str, str]:
    """One of the items a name's `concurrency` is split over: each its own partition."""
    return {"pk": f"RUN#{space_name}#{name}#{shard}", "sk": "-"}


def rate(space_name: str, name: str, shard: int) -> dict[str, str]:
    """One of the items a name's `rate` is split over (a GCRA's theoretical arrival time)."""
    return {"pk": f"RATE#{space_name}#{name}#{shard}", "sk": "-"}


# -- concurrency keys ------------------------------------------------------------------
# A job with a `concurrencyKey` waits in its key's own lane (`key_lane`, same D#/L# sort
# keys as a name's lanes), never in the name's: 100,000 jobs of a full key cannot bury the
# other keys. The key item (`key_item`) counts the key's running jobs (`held`, the per-key
# slot hold) and is the key's entry in the name's ready lanes: indexed (`gpk` a name shard,
# `gsk` its head job's sort key) while the key has pending jobs and room.

KEY_ENTRY_PREFIX = "Q#"


def key_item(space_name: str, name: str, key: str) -> dict[str, str]:
    return {"pk": f"{KEY_ENTRY_PREFIX}{space_name}#{name}#{key}", "sk": "-"}


def key_lane(space_name: str, name: str, key: str) -> str:
    """The ready partition of one key's pending jobs (a job keeps it for life, as any gpk)."""
    return f"{space_name}#{name}#K#{key}"


def key_entry_partition(space_name: str, name: str, key: str) -> str:
    """The name shard a key's entry is listed in: spread by the key, as jobs are by id."""
    return f"{space_name}#{name}#{_shard(key, READY_SHARDS)}"


def is_key_entry(row: dict[str, object]) -> bool:
    """Whether a ready-index row is a key's entry rather than a job."""
    return str(row["pk"]).startswith(KEY_ENTRY_PREFIX)


def ready_name(space_name: str, partition: str) -> str:
    """The job name of a ready partition (`ready_partition`): its middle part."""
    return partition.removeprefix(f"{space_name}#").rsplit("#", 1)[0]


def job_name(space_name: str, name: str) -> dict[str, str]:
    return {"pk": space(space_name), "sk": f"name#{name}"}


SPACES = "SPACES"


def space_entry(space_name: str) -> dict[str, str]:
    return {"pk": SPACES, "sk": space_name}


def delivery(space_name: str, job_id: str) -> dict[str, str]:
    return {"pk": f"C#{space_name}#{job_id}", "sk": "-"}


CALLBACK_SHARDS = 4


CALLBACK_PREFIX = "CALLBACK#"


def callback_partition(job_id: str) -> str:
    """Pending callback deliveries share the `ready` index with pending jobs, in partitions
    of their own, sorted by when they are next due (as do finished jobs whose delivery is
    not recorded yet)."""
    return f"{CALLBACK_PREFIX}{_shard(job_id, CALLBACK_SHARDS)}"


def callback_partitions() -> list[str]:
    return [f"{CALLBACK_PREFIX}{n}" for n in range(CALLBACK_SHARDS)]


def token(token_id: str) -> dict[str, str]:
    return {"pk": "T", "sk": token_id}


def lease_bucket(n: int, expires_ms: int, bucket_id: str) -> dict[str, str]:
    return {"pk": f"LEASE#{n}", "sk": f"{expires_ms:013d}#{bucket_id}"}
