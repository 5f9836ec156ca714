"""The contract's numbers, named once, and the few numbers of the table's layout that the
domain reads too (its spreads: ready shards, books)."""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

SECOND_MS = 1_000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
YEAR_MS = 365 * DAY_MS

MAX_JOBS_PER_CREATE = 1_000
MAX_PAYLOAD_BYTES = 4 * MIB
MAX_RESULT_BYTES = 4 * MIB
MAX_ERROR_BYTES = 4 * KIB
MAX_EVENT_BYTES = 4 * KIB
MAX_LINE_BYTES = 4 * KIB
MAX_JSON_DEPTH = 64
"""How deeply any JSON a user sends (payload, result, event, line metadata) may nest."""
MAX_LINES_PER_REPORT = 1_000
MAX_REPORTS_PER_REQUEST = 1_000
MAX_CANCELS_PER_REQUEST = 1_000
MAX_PROGRESS_MESSAGE = 1 * KIB
PROGRESS_DECIMALS = 6
"""A progress percent is kept to this many decimal places (DynamoDB numbers have 38 digits
and no exponent below -130; a float may have neither)."""
MAX_CLAIM_COUNT = 1_000
MAX_CLAIM_NAMES = 32
MAX_CLAIM_WAIT_MS = 60_000
MAX_CLAIM_PAYLOAD_BYTES = 8 * MIB
MAX_LIST_LIMIT = 1_000
MAX_RETRY_AFTER_MS = DAY_MS
MAX_DELAY_MS = YEAR_MS
MAX_JOB_DEFAULTS_PER_PATCH = 100
"""Job names whose defaults one PATCH of a space may change (each is a write or two)."""
MAX_KEY_WINDOW_MS = DAY_MS
MAX_LEASE_MS = 12 * HOUR_MS
MAX_SCHEDULE_JOB_BYTES = 16 * KIB
"""A schedule's job, as JSON: kept on the schedule's item, which every fire rewrites."""
MAX_SCHEDULE_FIRES_PER_TICK = 60
"""Fire times one schedule makes in a tick when it is behind (the clock was down): the
rest are made at the next ticks, each once."""
MAX_SCHEDULES_PER_PAGE = 100
UNCAPPED = 10**15
STALE_RESERVATION_MS = 15 * MINUTE_MS
"""Past any Lambda's run: a reservation of room this old belongs to a create that died."""
"""A cap no count reaches: what a write that is counted but never refused reserves under."""
MIN_FOLLOW_LINK_TTL_MS = MINUTE_MS
MAX_FOLLOW_LINK_TTL_MS = 30 * DAY_MS
DEFAULT_FOLLOW_LINK_TTL_MS = DAY_MS
MAX_FOLLOW_WAIT_MS = 25_000

# Defaults for a job, unless its space's settings or the job say otherwise.
DEFAULT_MAX_ATTEMPTS = 4
DEFAULT_TIMEOUT_MS = 5 * MINUTE_MS
DEFAULT_BACKOFF_MS = SECOND_MS
DEFAULT_BACKOFF_MAX_MS = HOUR_MS
DEFAULT_KEY_WINDOW_MS = 10 * MINUTE_MS
DEFAULT_UNCLAIMED_MS = 7 * DAY_MS
DEFAULT_MAX_EVENTS = 1_000
DEFAULT_COMPLETED_RETENTION_MS = 7 * DAY_MS
DEFAULT_FAILED_RETENTION_MS = 30 * DAY_MS

# The table's spread, which the domain reads too: a name's ready shards (`shared.spread`)
# and the clock's books (`shared.config`). The store names them in `shared.store.keys`.
READY_SHARDS = 4
"""A name's ready shards at rest: what every name has until its load asks for more."""
MAX_READY_SHARDS = 64
"""The most a name spreads over: 2 index writes a job, 500 jobs/s a shard, so 64 shards
hold 10,000 jobs/s at a third of their limit. Widths are powers of two from 4 to this."""
MAX_METRICS_NAMES = 20
"""Names a space may list under `metrics`: each publishes six custom metrics."""
WAIT_SHARDS = 4
"""The write shards of the deployment's waiting counts (`shared.store.backlog`): each stream
batch that moves pending jobs adds to one shard's minute and hour (a transactional write,
2 units each). One shard's items hold some 500 batches a second, about 12,500 jobs a
second; four, 50,000 for the deployment. The clock reads every shard: a few queries a tick."""
BOOK_SHARDS = 32
"""The write shards of each time slot of each book (`shared.store.books`: the lease book,
the deadline book): a claim request (or a create request with deadlines) puts one bucket
in a shard of the slot it is due in, and the clock deletes it, 2 write units a request. At
10,000 requests a second all due in one slot that is 312 puts a second a shard (31 % of its
limit); the clock drains a slot's shards side by side (`shared.sweeper.DRAIN_THREADS`, as
many). The clock reads only the shards a slot's map names, so an idle tick costs the same
whatever this is, and it may change in a deployed stack (each bucket's shard is in its map)."""
