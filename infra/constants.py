"""The deployment's numbers and names, in one place, each with the reason it is what it is.

The functions' runtime settings (claim waits, polls, caches, the clock's tick) are not
here: they are `shared.config`'s, which writes the functions' environment.

Plain Python only (no CDK imports): `first_token` reads the output names without
starting jsii. Sources marked [n.n] are sections of the team's AWS constraints notes,
quoted in `infra/README-deploy.md`.
"""

from __future__ import annotations

from shared import limits

SERVICE = "emit"
"""POWERTOOLS_SERVICE_NAME: the `service` key of every log line, metric and trace."""
METRICS_NAMESPACE = "Emit"
"""POWERTOOLS_METRICS_NAMESPACE: where JobsCreated, JobsClaimed and friends appear in CloudWatch."""

DEFAULT_STACK_NAME = "Emit"

# -- context flags (`cdk deploy -c name=value`) -------------------------------------------

STACK_NAME_CONTEXT = "stackName"
"""Deploy a second copy beside the first (a staging or a throwaway stack)."""
THROWAWAY_CONTEXT = "throwaway"
"""`-c throwaway=true`: no deletion protection, and `cdk destroy` deletes the data with the stack."""
ALARM_EMAIL_CONTEXT = "alarmEmail"
"""`-c alarmEmail=ops@example.com` subscribes an address to the alarm topic."""
DASHBOARD_CONTEXT = "dashboard"
"""`-c dashboard=true` adds the CloudWatch dashboard: $3 a month at rest (beyond an account's
first three), so it is off unless asked for; the alarms do not depend on it."""
FAILURE_RATE_ALARM_CONTEXT = "failureRateAlarm"
"""`-c failureRateAlarm=0.05` alarms when more than that share of the jobs that ended in five
minutes failed (at least `FAILURE_RATE_MIN_JOBS` of them): two metrics, $0.20 a month."""
OLDEST_CLAIMABLE_ALARM_CONTEXT = "oldestClaimableAlarmSeconds"
"""`-c oldestClaimableAlarmSeconds=900` alarms when a claimable job has waited that long
(the clock's `OldestClaimableAge`): one metric, $0.10 a month. Both are off unless asked
for, keeping a stack at rest under $1 a month."""

# -- stack outputs (stable keys: `first_token` and operators read them) --------------------

API_URL_OUTPUT = "ApiUrl"
TABLE_NAME_OUTPUT = "TableName"
BUCKET_NAME_OUTPUT = "BucketName"
ALARM_TOPIC_OUTPUT = "AlarmTopicArn"
DASHBOARD_OUTPUT = "DashboardName"
"""Only with `-c dashboard=true`."""
WAKE_URL_OUTPUT = "WakeUrl"

# -- API ----------------------------------------------------------------------------------

INTEGRATION_TIMEOUT_S = 30
"""An HTTP API waits at most 30 s for its integration, and that cannot be raised [1.1]."""

# -- logs ---------------------------------------------------------------------------------

LOG_RETENTION = "ONE_MONTH"
"""Function and access logs (a `logs.RetentionDays` member): long enough to investigate
last month's incident, short enough that storage stays cents."""

# -- data ---------------------------------------------------------------------------------

BLOB_EXPIRY_DAYS = (limits.MAX_DELAY_MS + limits.YEAR_MS + limits.YEAR_MS) // limits.DAY_MS + 30
"""Large payloads, results and errors live in S3 at most this long (1,125 days): a job may
wait a year to run (MAX_DELAY_MS), a year unclaimed (`unclaimedMs` ≤ 1 year) and a year
in retention (`*RetentionMs` ≤ 1 year), plus a month's margin. The job item's TTL ends a
job's life; this rule is the backstop for objects nothing else removed."""
INCOMPLETE_UPLOAD_DAYS = 1
"""The functions upload each object in one PUT; a stray multipart upload is garbage after a day."""

# -- alarms -------------------------------------------------------------------------------

ALARM_PERIOD_S = 300
"""Alarms look at 5-minute sums: one bad minute is a page, not five."""
API_5XX_THRESHOLD = 5
"""5xx answers per 5 minutes before the API alarm fires: a lone 500 is logged, a run is an incident."""
FAULTS_THRESHOLD = 1
"""Faults (`infra.constructs.monitoring`) per 5 minutes before the alarm fires: handlers turn
every exception into an HTTP answer, so any Lambda error (a crash, a timeout, out of memory,
a failed start) is unexpected, and a request whose function could not be invoked (throttled:
the account's concurrency is exhausted) is one the service refused."""
DEAD_LETTER_THRESHOLD = 1
"""Any message in a dead-letter queue is a record or a tick the service gave up on."""
ITERATOR_AGE_THRESHOLD_MS = 60_000
FAILURE_RATE_MIN_JOBS = 10
"""Fewer jobs ending in a period than this never raise the failure-rate alarm (one failure
of two jobs is no rate)."""
"""Stream records older than a minute mean the stream handler is falling behind
(stream records live 24 h [4.1])."""

# -- triggers (used when the stream handler and the clock join the stack) ------------------

STREAM_BATCH_SIZE = 100
"""Records per invocation: the event source mapping's default [4.3]; a batch of 100 job
changes is a few hundred milliseconds of work."""
STREAM_BATCHING_WINDOW_S = 0
"""No batching delay: a finished job's callback should not wait for company."""
STREAM_RETRY_ATTEMPTS = 5
"""Bounded retries [4.3]: the default (-1, forever) lets one poison record block its shard
for 24 h; after five tries the failed record's metadata goes to the dead-letter queue."""
STREAM_MAX_RECORD_AGE_S = 3_600
"""A record older than an hour is sent to the dead-letter queue instead of being retried."""
CLOCK_RETRY_ATTEMPTS = 2
"""A missed tick is covered by the next one a minute later; retry briefly, then dead-letter."""
CLOCK_MAX_EVENT_AGE_S = 120
"""A tick older than two minutes is superseded by newer ticks [5.7]."""
DEAD_LETTER_RETENTION_DAYS = 14
"""SQS's maximum: two weeks to notice the alarm and replay or inspect what failed."""

# -- the callback sender (functions/callback_sender.py, fed by its SQS queue) --------------

CALLBACK_SENDER_TIMEOUT_S = 30
"""A batch's sends run side by side, each over within 10 s; the rest is the hold and the
record around each (DynamoDB writes, retried)."""
CALLBACK_SENDER_CONCURRENCY = 20
"""Reserved for the sender (and the most its queue's event source runs at once, so it is
never throttled): up to 200 sends in flight, and never more, whatever a flood of callbacks
to dead targets asks of the account's concurrency."""
CALLBACK_BATCH_SIZE = 10
"""Messages per invocation: SQS's largest without a batching window, which would delay a
callback waiting for company."""
CALLBACK_VISIBILITY_TIMEOUT_S = 6 * CALLBACK_SENDER_TIMEOUT_S
"""Lambda's advice for a queue it reads [Lambda developer guide, "Using Lambda with Amazon
SQS"]: six times the function's timeout, so a message is not given again while a batch
that holds it is still running, throttling retries included."""
CALLBACK_MAX_RECEIVES = 5
"""A message whose attempt could not be made five times goes to the callback dead-letter
queue. Its delivery is still due in the table: the clock hands it over again."""
CALLBACK_MESSAGE_RETENTION_HOURS = 24
"""A delivery is retried for about a day; a message older than that has long been handed
over again by the clock."""
