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

from shared.schema import LogLevel, Scope

Status = Literal["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED"]
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


class Job(JobSummary):
    """One job, with its payload (and its result once completed)."""

    payload: Any = omitted()
    result: Any = omitted()


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


class ClaimedJobs(Answer):
    jobs: list[Claimed]
    """Oldest claimable first; empty when nothing arrived in time."""


class Rejection(Answer):
    reason: Literal[
        "STALE", "NOT_RUNNING", "ALREADY_FINISHED", "NOT_FOUND", "TOO_MANY_EVENTS", "INVALID", "RACE"
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


# -- spaces and tokens --------------------------------------------------------------------


class SecretSet(Answer):
    set: bool


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
    inFlight: int
    """Unfinished jobs."""


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
