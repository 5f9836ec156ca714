"""DynamoDB (and S3) persistence for jobs, spaces and tokens.

Layout of the one table, every key a string (`pk`, `sk`):

| item | pk | sk |
| --- | --- | --- |
| job (small; changes on every transition) | `J#{space}#{n}` (n = crc32(id) % 64) | `{id}` |
| large payload, result or error | `B#{space}#{id}` | `payload` / `result-{attempt}-{random}` / `error-...` |
| log lines of one report (a page) | `L#{space}#{id}` | `{first line:010d}` |
| event | `E#{space}#{id}` | `{seq:06d}` |
| idempotency key (kept a day past its job's finish) | `K#{space}#{key}` | `-` |
| retry mark of a retried job (naming the new job; kept as long as the old one) | `R#{space}#{old id}` | `-` |
| settings, in-flight count (capped), names, policies | `S#{space}` | `settings`, `inflight`, `name#{name}` |
| a name's concurrency slots, one share of its cap each | `RUN#{space}#{name}#{n}` (n < 16) | `-` |
| a name's rate, one share each (a GCRA's time) | `RATE#{space}#{name}#{n}` (n < 16) | `-` |
| token | `T` | `{token id}` |
| lease bucket (claims to check) | `LEASE#{slot end}#{n}` (n < `BOOK_SHARDS`) | `{at:013d}#{ulid}` |
| deadline bucket (jobs to cancel) | `DEADLINE#{slot end}#{n}` (n < `BOOK_SHARDS`) | `{at:013d}#{ulid}` |
| timer bucket (the clock's other work, `shared.timers`) | `TIMER#{slot end}#{n}` | `{at:013d}#{ulid}` |
| a book's map of a time slot (its shards in use) | `BOOKS` | `{slot start:013d}#{book's prefix}` |
| callback delivery of a finished job | `C#{space}#{id}` | `-` |
| the list of spaces (`GET /v1/spaces`) | `SPACES` | `{space}` |

One sparse index, `ready`, holds only pending jobs: `gpk` = `{space}#{name}#{n}` (n of the
name's width: 4 at rest, up to 64 under load, `shared.spread`), so one busy name is never
one hot partition; `gsk` is its
place in one of two lanes: due, `D#{order of hand-out:016d}#{id}` (claimable now, by
priority with aging), or later, `L#{ready at:013d}#{id}` (not before then). A claim
reads candidates there and decides with a conditional write on the job's own item.
A job with a `concurrencyKey` waits in its key's lane (`{space}#{name}#K#{key}`), and its
key's item (`Q#{space}#{name}#{key}`) stands for the key in the name's shards while the
key has room, in the key's shard of the name's width (`shared.store.keyed`).
Nothing else is in the index: a callback's delivery, and a job that finished with one, are
found by the clock through the timer book, by when they are due (`shared.timers`).

A space's job items are spread over 64 partitions by a hash of the id (`keys.JOB_SHARDS`):
a job is found by its id alone, no busy space has a hot job key (a job writes its item 3
to 4 times; 10,000 jobs/s is about 55 % of each partition's limit), and since the sort key
is the id, which sorts by creation, the list of a space's jobs reads its 64 partitions
newest first and merges them (`shared.store.listing`), with no index to keep.

A job item names the counts it holds a place in (`holds`: its space's `maxInFlight`, its
name's slot); a transition that takes or lets go of one writes the job and the counter in
one transaction (`shared.store.counters`).

The modules, by what they keep:

| module | keeps |
| --- | --- |
| `port` | every store as the use cases see it, in values: all that is imported outside the store |
| `table`, `keys`, `dynamo`, `codec` | the table's shape, its keys, the client, items <-> jobs |
| `jobs/` | job items, one module a mechanism: `insert`, `read`, `pages`, `apply`, `claim` (`jobs/__init__`) |
| `keyed`, `counters`, `spread` | keys' entries, counted limits (slots, rates, `maxInFlight`), widths |
| `blobs`, `journal`, `listing` | large values (side items, S3), lines and events, the newest-first list |
| `books`, `leases`, `deadlines`, `timers` | the buckets the clock reads: leases, deadlines, timers |
| `deliveries`, `spaces`, `tokens`, `secrets` | callbacks' deliveries, spaces' own items, tokens, secrets |
| `settings`, `policies` | a space's settings and its names' policies, as values |
| `listeners` | wake's connections, what each listens to, when a name was last hinted |
| `images` | a job as one look at its item saw it (`Snapshot`): stream records, the sender's messages |
"""
