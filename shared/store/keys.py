"""Item keys: the table's layout (see the package docstring) in one place."""

from __future__ import annotations

import zlib

from shared import limits

JOB_SHARDS = 64
"""The partitions a space's job items are spread over (`job`), by a hash of the id. Each
job writes its item about 3 to 4 times (create, claim, complete, reports): at 10,000 jobs/s
that is about 35,000 write units a second, some 550 a partition (55 % of its limit). A page
of the space's jobs reads each of them newest first and merges them (`shared.store.listing`):
the sort key is the id, and ids sort by creation."""
# The spreads of the ready index and the books: numbers the domain reads too (a name's
# width, the clock's configuration), so they are kept in `shared.limits` and named here.
READY_SHARDS = limits.READY_SHARDS
MAX_READY_SHARDS = limits.MAX_READY_SHARDS
BOOK_SHARDS = limits.BOOK_SHARDS
LEASE_PREFIX = "LEASE#"
DEADLINE_PREFIX = "DEADLINE#"
TIMER_PREFIX = "TIMER#"


def _shard(job_id: str, shards: int) -> int:
    return zlib.crc32(job_id.encode()) % shards


JOB_PREFIX = "J#"


def job(space: str, job_id: str) -> dict[str, str]:
    """A job's item: in one of its space's `JOB_SHARDS` partitions, chosen by its id, so a
    job is found by its id alone, no busy space has a hot job key, and a space's jobs are
    listed newest first from the table itself (its sort key is the id)."""
    return {"pk": job_partition(space, _shard(job_id, JOB_SHARDS)), "sk": job_id}


def job_partition(space: str, n: int) -> str:
    return f"{JOB_PREFIX}{space}#{n}"


def job_partitions(space: str) -> list[str]:
    return [job_partition(space, n) for n in range(JOB_SHARDS)]


def ready_partition(space: str, name: str, job_id: str, width: int = READY_SHARDS) -> str:
    """The ready shard a new job of `name` is written to, of the `width` its name has now.

    Widths are powers of two, so a job's shard modulo 4 is its shard at rest: its home."""
    return ready_shard(space, name, _shard(job_id, width))


def ready_home(space: str, name: str, job_id: str) -> str:
    """The rest shard of a job: one every reach covers, however far its name has narrowed."""
    return ready_shard(space, name, _shard(job_id, READY_SHARDS))


def rest_shard(partition: str) -> str:
    """The rest shard of a ready shard (`ready_partition`'s modulo 4): the same jobs' home."""
    prefix, n = partition.rsplit("#", 1)
    return f"{prefix}#{int(n) % READY_SHARDS}"


def ready_shard(space: str, name: str, n: int) -> str:
    return f"{space}#{name}#{n}"


def ready_partitions(space: str, name: str, reach: int = READY_SHARDS) -> list[str]:
    """The ready shards of `name` that claims read: the first `reach` (at least the 4 at rest)."""
    return [ready_shard(space, name, n) for n in range(max(reach, READY_SHARDS))]


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


def retry_marker(space: str, job_id: str) -> dict[str, str]:
    """The mark that a job was retried (`shared.retry`): written in the new job's own
    transaction on condition it is not there yet, naming the new job, so a job is retried
    once however many requests race. It lives as long as the old job (its TTL)."""
    return {"pk": f"R#{space}#{job_id}", "sk": "-"}


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


def key_entry_partition(space_name: str, name: str, key: str, width: int = READY_SHARDS) -> str:
    """The name shard a key's entry is listed in, of the `width` its name has now: spread by
    the key, as jobs are by id (so 1,000 busy keys spread with their name, and a key's entry
    listed again under the same width stays in its shard). Widths are powers of two, so the
    key's shard modulo 4 is its shard at rest."""
    return ready_shard(space_name, name, _shard(key, width))


def is_key_entry(row: dict[str, object]) -> bool:
    """Whether a ready-index row is a key's entry rather than a job."""
    return str(row["pk"]).startswith(KEY_ENTRY_PREFIX)


def ready_name(space_name: str, partition: str) -> str:
    """The job name of a ready partition (`ready_partition`): its middle part."""
    return partition.removeprefix(f"{space_name}#").rsplit("#", 1)[0]


NAME_PREFIX = "name#"
"""A name's item in its space's partition: its sort key is this and the name."""


def job_name(space_name: str, name: str) -> dict[str, str]:
    return {"pk": space(space_name), "sk": f"{NAME_PREFIX}{name}"}


def name_load(space_name: str, name: str) -> dict[str, str]:
    """The sampled count of a name's recent creates (`shared.spread`), apart from the
    space's own partition, which every claim reads."""
    return {"pk": f"N#{space_name}#{name}", "sk": "load"}


SPACES = "SPACES"


def space_entry(space_name: str) -> dict[str, str]:
    return {"pk": SPACES, "sk": space_name}


def schedule(space_name: str, schedule_id: str) -> dict[str, str]:
    """A schedule (`shared.store.schedules`): a partition of its own, so fires of many
    schedules of one space never share a key."""
    return {"pk": f"SC#{space_name}#{schedule_id}", "sk": "-"}


def schedules(space_name: str) -> str:
    """The listing of a space's schedules, by id: written when one is made or deleted,
    never when it fires."""
    return f"SCHEDULES#{space_name}"


TALLIED_PREFIX = "TALLIED#"
"""A stream batch's counts' mark (`shared.store.tallies`)."""
COUNT_PREFIX = "CNT#"


def space_counts(space_name: str) -> dict[str, str]:
    """A space's gauges: a partition of its own, apart from its names' (each batch that
    moves a busy space's jobs writes both)."""
    return {"pk": f"{COUNT_PREFIX}{space_name}", "sk": "-"}


def name_counts(space_name: str, name: str) -> dict[str, str]:
    """A name's gauges, a partition each: no key is shared by a space's names."""
    return {"pk": f"{COUNT_PREFIX}{space_name}#{name}", "sk": "-"}


def minutes(space_name: str, name: str) -> str:
    return f"MIN#{space_name}#{name}"


def minute_sort(ms: int) -> str:
    """A minute's sort key: its start, zero-padded so the keys sort as the times do."""
    return f"{ms:015d}"


def minute(space_name: str, name: str, minute_ms: int) -> dict[str, str]:
    return {"pk": minutes(space_name, name), "sk": minute_sort(minute_ms)}


WAIT_PREFIX = "WAIT#"
WAIT_HOURS_PREFIX = "WAITH#"
DEPLOYMENT = "*"
"""The waiting counts' scope of the whole deployment; a name's is `name_scope`."""


def name_scope(space_name: str, name: str) -> str:
    return f"{space_name}#{name}"


def backlog_place(scope: str) -> dict[str, str]:
    """The clock's place in a scope's waiting counts (`shared.store.backlog`)."""
    return {"pk": f"BACKLOG#{scope}", "sk": "-"}


def wait_minutes(scope: str, shard: int, day_ms: int) -> str:
    """A shard's waiting counts of one day, a minute each: a partition a day, so the minutes
    written now are apart from those only read, and the minutes since a place less than a
    day old are one query a shard. The shard comes last, so a period's shards share all of
    the key before it."""
    return f"{WAIT_PREFIX}{scope}#{day_ms:013d}#{shard}"


def wait_minute(scope: str, shard: int, minute_ms: int) -> dict[str, str]:
    day = minute_ms // limits.DAY_MS * limits.DAY_MS
    return {"pk": wait_minutes(scope, shard, day), "sk": minute_sort(minute_ms)}


def wait_hours(scope: str, shard: int) -> str:
    return f"{WAIT_HOURS_PREFIX}{scope}#{shard}"


def wait_hour(scope: str, shard: int, hour_ms: int) -> dict[str, str]:
    return {"pk": wait_hours(scope, shard), "sk": minute_sort(hour_ms)}


def delivery(space_name: str, job_id: str) -> dict[str, str]:
    return {"pk": f"C#{space_name}#{job_id}", "sk": "-"}


TOKENS = "T"
"""The one partition of every token (`shared.auth` says why a process caches them)."""


def token(token_id: str) -> dict[str, str]:
    return {"pk": TOKENS, "sk": token_id}


# -- the books by time slot (`shared.store.books`) ------------------------------------------
# A bucket looked at `at` lives in a write shard of its time slot (the clock's tick, by
# default), a partition named by the slot's end; the slot's map, keyed by its start, names
# the shards that may hold buckets, so a tick reads the maps of the slots begun by then (one
# query) and only the shards they name. Each key carries its own times, so a slot's length
# may change in a deployed stack.

BOOK_MAPS = "BOOKS"
"""The partition of every book's slot maps: one item per (slot, book)."""


def book_partition(prefix: str, until_ms: int, n: int) -> str:
    """Write shard `n` of the slot ending at `until_ms` in the book of `prefix` (`LEASE#1790000060000#7`)."""
    return f"{prefix}{until_ms}#{n}"


def book_partition_until(prefix: str, partition: str) -> int:
    """The end of the slot of a `book_partition`."""
    return int(partition.removeprefix(prefix).split("#", 1)[0])


def book_slot_bucket(prefix: str, until_ms: int, n: int, at_ms: int, bucket_id: str) -> dict[str, str]:
    """A bucket looked at from `at_ms` on, in write shard `n` of the slot ending at `until_ms`."""
    return {"pk": book_partition(prefix, until_ms, n), "sk": f"{at_ms:013d}#{bucket_id}"}


def book_map(start_ms: int, prefix: str) -> dict[str, str]:
    """The map of the slot starting at `start_ms` in the book of `prefix`: the write shards
    that may hold its buckets (`shards`), its end (`until`), and its last `mark`."""
    return {"pk": BOOK_MAPS, "sk": f"{start_ms:013d}#{prefix}"}


def book_maps_bound(now_ms: int) -> str:
    """Every map's sort key of a slot begun by `now_ms`, of any book, is at most this."""
    return f"{now_ms:013d}#{LANE_END}"


def book_map_start(sort_key: str) -> tuple[int, str]:
    """The slot's start and the book's prefix of a map's sort key (`book_map`)."""
    start, prefix = sort_key.split("#", 1)
    return int(start), prefix


def service_secret(purpose: str) -> dict[str, str]:
    """A secret the service made for itself (`shared.store.secrets`), one item per purpose,
    in a partition no space, job or token can name."""
    return {"pk": "SECRET", "sk": purpose}
