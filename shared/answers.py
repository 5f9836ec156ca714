"""Answer bodies, as pydantic models: every JSON answer is built through one of these, and
the OpenAPI document (`shared.openapi`) is generated from the same classes, so the two
cannot drift apart.

A field is one of three kinds, and the JSON keeps them apart exactly:
- required: always present, never null;
- required and nullable (`X | None`, no default): always present, null when unset;
- omitted (`X | Omitted = omitted()`): present only when it applies, never null.
Answers are dumped with `exclude_unset`, so a renderer decides which omitted fields a
given answer shows by passing them or not.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from shared.schema import Guarantee, LogLevel, Scope

Status = Literal["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "STALLED"]
Omitted = SkipJsonSchema[None]
"""For a field the answer leaves out rather than showing null."""
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
"""An int stays an int (`50`, not `50.0`), as the value was sent."""
MsString = Annotated[str, Field(pattern=r"^[0-9]+$")]
"""A time in ms as a decimal string (leases: clients in JavaScript keep every digit)."""


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def omitted() -> Any:
    """The default of an omitted field: absent from the answer, and from the schema's defaults."""
    return Field(default=None, json_schema_extra=_no_default)


class Answer(BaseModel):
    """Strict both ways: an answer holds exactly the fields its model names."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    def shown(self) -> dict[str, Any]:
        """The JSON object this answer is: the fields set, in the model's order."""
        return self.model_dump(exclude_unset=True)


# -- errors -------------------------------------------------------------------------------


class Error(Answer):
    """Every error: the code names the kind, the message the field that is wrong."""

    code: Literal[
        "InvalidArgument", "Unauthenticated", "PermissionDenied", "NotFound", "ResourceExhausted", "Internal"
    ]
    message: str


class Exhausted(Answer):
    """A `429`: the space is full; the `Retry-After` header says the same in whole seconds."""

    code: Literal["ResourceExhausted"]
    message: str
    retryAfterMs: Annotated[int, Field(ge=0)]


# -- jobs ---------------------------------------------------------------------------------


class Backoff(Answer):
    kind: Literal["exponential", "linear", "constant"]
    maxMs: int
    jitter: bool


class Fired(Answer):
    """The schedule that made a job, and the fire time it was made for."""

    id: str
    atMs: int


class Progress(Answer):
    percent: Number
    message: str | None


class Delivery(Answer):
    """A finished job's callback: PENDING until delivered or given up."""

    state: Literal["PENDING", "DELIVERED", "GAVE_UP"]
    attempts: int
    lastStatus: int | Omitted = omitted()
    """The receiver's HTTP status, when it answered."""
    lastError: str | Omitted = omitted()
    lastAttemptAtMs: int | Omitted = omitted()
    deliveredAtMs: int | Omitted = omitted()
    nextAtMs: int | Omitted = omitted()
    """Pending: the next try."""


class Callback(Answer):
    url: str
    headers: dict[str, Literal[""]]
    """Header names only: values can carry credentials and are never shown again."""
    delivery: Delivery | Omitted = omitted()
    """Once the job has finished (one job's GET only)."""


WaitReason = Literal[
    "DELAY", "BACKOFF", "PAUSED", "CONCURRENCY", "RATE", "KEY_CONCURRENCY", "KEY_RATE", "WORKER"
]
"""Why a pending job is not running, the first that holds in this order: its first time has
not come (DELAY), it waits before a retry (BACKOFF), its name is paused (PAUSED), its name
has `concurrency` jobs running (CONCURRENCY), its name's `rate` is used up (RATE), its
`concurrencyKey` has `perKeyConcurrency` jobs running (KEY_CONCURRENCY) or its key's
`perKeyRate` is used up (KEY_RATE), or it is claimable and no worker has asked for its
name (WORKER)."""


class WaitingOn(Answer):
    reason: WaitReason
    untilMs: int | Omitted = omitted()
    """DELAY and BACKOFF: when it becomes claimable; RATE and KEY_RATE: when the next hand-out
    is allowed."""
    key: str | Omitted = omitted()
    """KEY_CONCURRENCY and KEY_RATE: the job's `concurrencyKey`."""


class JobSummary(Answer):
    """A job as a list shows it: everything but its payload and result."""

    id: str
    space: str
    name: str
    status: Status
    attempt: int
    """Hand-outs so far."""
    failures: int
    maxAttempts: int
    timeoutMs: int
    backoffMs: int
    backoff: Backoff
    key: str | None
    priority: int
    """-1,000 to 1,000, higher first."""
    concurrencyKey: str | None
    guarantee: Guarantee
    """AT_MOST_ONCE: never handed out again once an attempt may have started (a lease that
    ends moves it to STALLED)."""
    expiresAtMs: int | None
    """The deadline: not finished by then, the job is cancelled with error `expired`."""
    createdAtMs: int
    runAtMs: int
    finishedAtMs: int | None
    progress: Progress | None
    callback: Callback | None
    lineCount: int
    eventCount: int
    readyAtMs: int | Omitted = omitted()
    """Pending: when it can next be claimed."""
    leaseUntilMs: MsString | Omitted = omitted()
    """Running: when the current hold ends unless renewed."""
    error: str | Omitted = omitted()
    """The last error, unless completed."""
    retryOf: str | Omitted = omitted()
    """The failed job this one retries (`jobs:retry`)."""
    schedule: Fired | Omitted = omitted()
    """The schedule that made it, and for which fire time."""
    traceparent: str | Omitted = omitted()
    """The W3C trace context it was created with (its own field, or the create's header)."""


class Attempt(Answer):
    """One hand-out of the job to a worker."""

    attempt: int
    startedAtMs: int
    endedAtMs: int | None
    """Null while it runs."""
    outcome: Literal["COMPLETED", "FAILED", "RELEASED", "EXPIRED", "CANCELLED"] | None
    """How it ended: its worker completed, failed or released it, its lease ran out
    (EXPIRED), or the job was cancelled while it ran (a cancel, its deadline); null while
    it runs."""
    error: str | Omitted = omitted()
    """A failed attempt's error, its first 100 characters (the job's `error` is the last
    one in full)."""


class Job(JobSummary):
    """One job, with its payload (and its result once completed)."""

    payload: Any = omitted()
    result: Any = omitted()
    attempts: list[Attempt] = Field(default_factory=list)
    """Its last 10 attempts, oldest first."""
    waitingOn: WaitingOn | Omitted = omitted()
    """Pending: why it is not running yet."""


class JobPage(Answer):
    jobs: list[JobSummary]
    cursor: str | None
    """For the next page; null on the last."""


class Created(Answer):
    id: str
    outcome: Literal["NEW", "DUPLICATE"]


class CreatedBatch(Answer):
    jobs: list[Created]
    """In the order sent."""


class Claimed(Answer):
    """A job handed to a worker: each report names its `id` and `attempt`."""

    id: str
    attempt: int
    name: str
    payload: Any
    leaseUntilMs: MsString
    maxAttempts: int
    """Failed attempts before the job fails: with `failures`, a worker can tell its last try."""
    failures: int
    """Attempts that failed before this one (releases and lost at-least-once leases are not
    failures)."""
    guarantee: Literal["AT_MOST_ONCE"] | Omitted = omitted()
    """Shown for an AT_MOST_ONCE job only: a worker must not give it back (release) once its
    handler has started, nor run it again."""
    traceparent: str | Omitted = omitted()
    """The W3C trace context the job was created with, when it has one: the worker's spans
    for this attempt continue that trace (their parent is the producer's span)."""


class ClaimedJobs(Answer):
    jobs: list[Claimed]
    """Oldest claimable first; empty when nothing arrived in time."""
    wakeUrl: str | Omitted = omitted()
    """Where a worker listens for hints (a WebSocket, `shared.wake`); left out where the
    deployment has no wake (a worker then long-polls)."""


class Rejection(Answer):
    reason: Literal[
        "STALE",
        "NOT_RUNNING",
        "ALREADY_FINISHED",
        "NOT_FOUND",
        "TOO_MANY_EVENTS",
        "INVALID",
        "RACE",
        "NOT_RETRYABLE",
    ]
    message: str


class Applied(Answer):
    status: Status
    """The job's status after it."""


class Rejected(Answer):
    rejection: Rejection


class Outcomes(Answer):
    """One outcome per report or id, in the order sent."""

    outcomes: list[Applied | Rejected]


class Retried(Answer):
    """A retried job's new job: `NEW`, or `DUPLICATE` when the job was retried before."""

    id: str
    retryOf: str
    outcome: Literal["NEW", "DUPLICATE"]


class RetryOutcomes(Answer):
    """One outcome per id, in the order sent."""

    outcomes: list[Retried | Rejected]


class Line(Answer):
    seq: int
    level: LogLevel
    message: str
    source: str | Omitted = omitted()
    metadata: Any = omitted()
    atMs: int


class LinePage(Answer):
    lines: list[Line]
    cursor: str | None
    """The next `seq` to ask from; null when there is nothing more yet."""


class Event(Answer):
    seq: int
    atMs: int
    event: Any


class EventPage(Answer):
    events: list[Event]
    cursor: str | None
    """The next `seq` to ask from; null when there is nothing more yet."""


# -- follow links -------------------------------------------------------------------------


class FollowLink(Answer):
    """A link to follow one job without a token, read-only, until `expiresAtMs`."""

    url: str
    """`GET /v1/follow/{token}` on the API's own address."""
    token: str
    expiresAtMs: int


class FollowedJob(Answer):
    """A job as a person follows it: never its payload, key, callback or events."""

    id: str
    name: str
    status: Status
    attempt: int
    progress: Progress | None
    createdAtMs: int
    finishedAtMs: int | None
    result: Any = omitted()
    """Completed: the result."""
    error: str | Omitted = omitted()
    """Failed or stalled: the last error."""
    lines: list[Line]
    """Log lines from `afterSeq` on, at most 100."""
    nextSeq: int
    """The `afterSeq` to ask with next."""
    version: str
    """Send it back as `version` (with `waitMs`) to wait for the next change."""


# -- spaces and tokens --------------------------------------------------------------------


class SecretSet(Answer):
    set: bool


class Rate(Answer):
    tokens: int
    intervalMs: int


class Policy(Answer):
    """A policy in force, every field filled in."""

    concurrency: int | None
    """Jobs of the name running at once; null: no limit."""
    rate: Rate | None
    """Hand-outs per interval; null: no limit."""
    perKeyConcurrency: int | None
    """Jobs running at once per `concurrencyKey`; null: no limit."""
    perKeyRate: Rate | None
    """Hand-outs per interval per `concurrencyKey`; null: no limit."""
    paused: bool
    """Nothing of the name is handed out; creates are still accepted."""
    agingIntervalMs: int | None
    """How long a wait is worth one step of priority; null: strict priority, then time."""


PolicyField = Literal["concurrency", "rate", "perKeyConcurrency", "perKeyRate", "paused", "agingIntervalMs"]


class _Named(Answer):
    name: str


# Policy's fields, written once. `_Named` is the last base so that `name` leads the answer, as
# the README shows it: pydantic orders fields from the farthest base in. (The class docstring
# is the OpenAPI description, so the note stays here.)
class NamePolicy(Policy, _Named):
    """A job name's policy in force: the space's default, with the fields the name sets itself."""

    overridden: list[PolicyField]
    """The fields this name sets itself; the others are the space's default."""


class NameDiagnostics(Answer):
    """Where one job name's work stands."""

    name: str
    pending: int
    """Pending jobs, claimable or not (at most the cap, see `capped`)."""
    claimable: int
    """Pending jobs that a claim for this name could take now, were it not paused."""
    running: int
    """Running jobs: by its slots (exact) while the name has a `concurrency`, else from the
    stream's counts (a few seconds behind)."""
    capped: bool
    """A count reached 10,000 and stopped there: `pending` and `claimable` are at least that."""
    policy: Policy
    waitingOn: list[WaitReason]
    """The reasons pending jobs of the name wait now, in the order a job's `waitingOn` takes them."""
    oldestClaimableAtMs: int | None
    """When the longest-waiting claimable job became claimable (among those counted)."""


class Diagnostics(Answer):
    names: list[NameDiagnostics]
    """Every name with unfinished jobs or a policy of its own, by name."""


class BackoffDefault(Answer):
    """The parts of a backoff a name sets."""

    kind: Literal["exponential", "linear", "constant"] | Omitted = omitted()
    maxMs: int | Omitted = omitted()
    jitter: bool | Omitted = omitted()


class JobDefaults(Answer):
    """The options a name's jobs take when their creator leaves them out: only those set."""

    priority: int | Omitted = omitted()
    maxAttempts: int | Omitted = omitted()
    timeoutMs: int | Omitted = omitted()
    backoffMs: int | Omitted = omitted()
    backoff: BackoffDefault | Omitted = omitted()
    guarantee: Guarantee | Omitted = omitted()
    concurrencyKey: str | Omitted = omitted()
    delayMs: int | Omitted = omitted()
    expiresInMs: int | Omitted = omitted()


class OnFailure(Answer):
    """A space's failure notices: a job of `name` for each job that ends FAILED or STALLED."""

    name: str
    sinceMs: int
    """When the setting was first made: jobs that ended before it send no notice."""


class OnSettled(Answer):
    """A space's settled notices: a job of `name` for each job that ends in one of `statuses`."""

    name: str
    statuses: list[Literal["COMPLETED", "FAILED", "CANCELLED", "STALLED"]]
    sinceMs: int
    """When the setting was first made: jobs that ended before it send no notice."""


class Space(Answer):
    """A space's settings in force, defaults filled in."""

    space: str
    maxAttempts: int
    timeoutMs: int
    backoffMs: int
    backoff: Backoff
    unclaimedMs: int | None
    """null: off."""
    keyWindowMs: int
    maxEvents: int
    maxInFlight: int | None
    """null: no cap."""
    webhookSecret: SecretSet
    completedRetentionMs: int
    failedRetentionMs: int
    policy: Policy
    """The default policy of the space's job names."""
    jobDefaults: dict[str, JobDefaults]
    """Defaults per job name, by name (names with none are left out)."""
    onFailure: OnFailure | None
    """Where failure notices go; null: nowhere."""
    onSettled: OnSettled | None
    """Where settled notices go; null: nowhere."""
    metrics: list[str]
    """The names whose own CloudWatch metrics the clock publishes, in name order."""
    inFlight: int
    """Unfinished jobs: under a `maxInFlight`, those created while it was set (exact); without
    one, every unfinished job, from the stream's counts (a few seconds behind)."""
    wakeUrl: str | Omitted = omitted()
    """Where workers listen for hints (a WebSocket, `shared.wake`); left out where the
    deployment has no wake."""


class SpaceEntry(Answer):
    """A space the token may use."""

    name: str
    inFlight: int
    """Unfinished jobs, as `GET /v1/spaces/{space}` counts them."""


class SpaceList(Answer):
    spaces: list[SpaceEntry]
    cursor: str | None
    """For the next page; null on the last."""


class Token(Answer):
    """A token without its secret."""

    id: str
    name: str | None
    scopes: list[Scope]
    spaces: list[str] | None
    """null: every space."""
    createdAtMs: int


class MintedToken(Answer):
    """A token just made: `token` is the bearer secret, shown this once."""

    token: str
    id: str
    name: str | None
    scopes: list[Scope]
    spaces: list[str] | None
    createdAtMs: int


class TokenList(Answer):
    tokens: list[Token]


class LastRun(Answer):
    atMs: int
    """The fire time it was made for (a trigger's: when it was triggered)."""
    jobId: str


class Schedule(Answer):
    """A schedule: the job `job` made at each time `cron` names in `timezone`."""

    id: str
    space: str
    cron: str
    timezone: str
    job: dict[str, Any]
    """The job each fire makes, as set (a create body without key, delayMs, runAtMs, expiresAtMs)."""
    paused: bool
    overlap: Literal["ALLOW", "SKIP"]
    createdAtMs: int
    updatedAtMs: int
    nextRunsAtMs: list[int]
    """The next five fire times; none while paused."""
    lastRun: LastRun | None
    """The job it made last, and for which fire time; null: none yet."""


class SchedulePage(Answer):
    schedules: list[Schedule]
    """By id."""
    cursor: str | None
    """For the next page; null on the last."""


class MetricPoint(Answer):
    """One minute of one name."""

    atMs: int
    """The minute's start."""
    created: int
    claimed: int
    completed: int
    failed: int
    """Ended FAILED or STALLED."""
    cancelled: int
    pending: int
    """Pending jobs at the minute's end (claimable or waiting for their time)."""
    running: int
    """Running jobs at the minute's end."""


class NameMetrics(Answer):
    name: str
    points: list[MetricPoint]
    """Sixty, a minute apart, oldest first; the last is the minute now, so far."""


class Metrics(Answer):
    """A space's last hour, name by name, from the stream's counts (a few seconds behind)."""

    fromMs: int
    """The first point's minute."""
    stepMs: int
    names: list[NameMetrics]
    """Every name the space has counted jobs of (or those `name` asks for), by name."""
