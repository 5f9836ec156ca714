"""Request bodies, as pydantic models, and the contract's way of naming what is wrong.

Models are strict: `"5"` is not a number and unknown fields are refused, so a typo in
a field name is a 400 rather than a silently ignored option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from shared import limits
from shared.errors import InvalidArgument

NAME_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
SPACE_PATTERN = r"^[a-z0-9_-]{1,64}$"
NAME_RULE = "must be 1-128 of A-Z a-z 0-9 . _ : -"
SPACE_RULE = "must be 1-64 of a-z 0-9 - _"

Scope = Literal["create", "read", "work", "admin"]
LogLevel = Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def utf8_at_most(most: int) -> AfterValidator:
    """The contract's sizes are bytes: a 4 KiB message is 4,096 bytes of UTF-8, not characters."""

    def check(text: str) -> str:
        if len(text.encode("utf-8", errors="surrogatepass")) > most:
            raise ValueError(f"must be at most {most} bytes of UTF-8")
        return text

    return AfterValidator(check)


def nesting_within(value: Any, most: int) -> bool:
    """Whether JSON `value` nests at most `most` arrays and objects deep.

    Level by level rather than recursively: the walk itself must not be what a deep value
    breaks, and it stops at the first level past `most`."""
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > most:
            return False
        inner: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            # Iterators of C built-ins: about 2 M values in under a tenth of a second.
            inner.extend(compress(items, map(_CONTAINERS.__contains__, map(type, items))))
        level = inner
    return True


_CONTAINERS = frozenset({dict, list})


def _shallow(value: Any) -> Any:
    if not nesting_within(value, limits.MAX_JSON_DEPTH):
        raise ValueError(f"must be nested at most {limits.MAX_JSON_DEPTH} levels deep")
    return value


JsonValue = Annotated[Any, AfterValidator(_shallow)]
"""Any JSON a user sends, nested at most `limits.MAX_JSON_DEPTH` deep. A deeper value is
refused where it enters: it would be stored, then break whichever later step (a claim, a
read, a callback) parses or writes it deeper in the stack, answering 500 there."""


HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
RESERVED_HEADERS = frozenset({"host", "content-length", "content-type", "transfer-encoding", "connection"})
MAX_CALLBACK_HEADER_BYTES = 8 * 1024


JobName = Annotated[str, Field(pattern=NAME_PATTERN)]


TRACEPARENT_RULE = (
    "must be a W3C traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, "
    "in lowercase, neither id all zeros"
)
MAX_TRACEPARENT_CHARS = 512
"""A later version may add fields after the four (kept off: only the four are stored)."""
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[\x20-\x7e]*)?")
TRACEPARENT_PATTERN = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(-[\x20-\x7e]*)?$"
"""What the OpenAPI document shows; `traceparent` checks the rest (ids not all zeros, no
version ff, nothing after the four fields in version 00)."""


def traceparent(value: str) -> str:
    """`value` as kept, if it is a W3C Trace Context `traceparent`: version 00 exactly as the
    spec spells it; a later version (01 to fe, which this reader does not know) by its
    first four fields, which the spec says every version keeps, and only those are kept.
    Version ff is invalid, as is an all-zero trace id or parent id."""
    found = _TRACEPARENT.fullmatch(value) if len(value) <= MAX_TRACEPARENT_CHARS else None
    if found is None:
        raise ValueError(TRACEPARENT_RULE)
    version, trace_id, parent_id, _flags, rest = found.groups()
    if version == "ff":
        raise ValueError(f"{TRACEPARENT_RULE} (version ff is invalid)")
    if version == "00" and rest is not None:
        raise ValueError(f"{TRACEPARENT_RULE} (version 00 has exactly four fields)")
    if trace_id == "0" * 32 or parent_id == "0" * 16:
        raise ValueError(TRACEPARENT_RULE)
    return value[:55]


Traceparent = Annotated[
    str,
    AfterValidator(traceparent),
    WithJsonSchema({"type": "string", "pattern": TRACEPARENT_PATTERN, "maxLength": MAX_TRACEPARENT_CHARS}),
]
Ms = Annotated[int, Field(ge=0)]


class BackoffSpec(Body):
    kind: Literal["exponential", "linear", "constant"] | None = None
    maxMs: Annotated[int, Field(ge=0, le=limits.DAY_MS)] | None = None
    jitter: bool | None = None


class CallbackSpec(Body):
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    headers: dict[str, str] = Field(default_factory=dict, max_length=32)

    @field_validator("headers")
    @classmethod
    def _sendable(cls, headers: dict[str, str]) -> dict[str, str]:
        """Headers an HTTP client can send as given: token names, printable ASCII values."""
        for name, value in headers.items():
            if not HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a header name")
            if name.lower() in RESERVED_HEADERS or name.lower() == "emit-signature":
                raise ValueError(f"{name} is set by emit itself")
            if not all(32 <= ord(c) < 127 or c == "\t" for c in value):
                raise ValueError(f"the value of {name} must be printable ASCII")
        if sum(len(n) + len(v) for n, v in headers.items()) > MAX_CALLBACK_HEADER_BYTES:
            raise ValueError(f"must be at most {MAX_CALLBACK_HEADER_BYTES} bytes in all")
        return headers


def _priority_left_out(schema: dict[str, Any]) -> None:
    """A job's `priority` left out is the name's default (`jobDefaults`), else 0: the
    document gives no `default` of 0 but says so, or a client generated from it would send
    0 whenever its caller sends nothing, which would override the name's default."""
    schema.pop("default", None)
    schema["description"] = "Higher first. Left out: the name's default (`jobDefaults`), else 0."


class JobTemplate(Body):
    """A job as a schedule makes it (`Schedule.job`): a create body without the fields that
    fix one job's own identity or time (`key`, `delayMs`, `runAtMs`, `expiresAtMs`)."""

    name: JobName
    payload: JsonValue = None
    maxAttempts: Annotated[int, Field(ge=1, le=1_000)] | None = None
    timeoutMs: Annotated[int, Field(ge=1_000, le=43_200_000)] | None = None
    backoffMs: Annotated[int, Field(ge=0, le=limits.DAY_MS)] | None = None
    backoff: BackoffSpec | None = None
    callback: CallbackSpec | None = None
    priority: Annotated[int, Field(ge=-1_000, le=1_000, json_schema_extra=_priority_left_out)] = 0
    """Higher first; with aging, a job that waited long enough goes before newer higher ones."""
    concurrencyKey: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    """Jobs sharing a key share the name's per-key limits."""
    guarantee: Literal["AT_LEAST_ONCE", "AT_MOST_ONCE"] | None = None
    """AT_LEAST_ONCE (the default): a lease that ends retries the job. AT_MOST_ONCE: never
    handed out again once an attempt may have started; a lease that ends stalls it."""
    expiresInMs: Annotated[int, Field(ge=1, le=limits.MAX_DELAY_MS)] | None = None
    """The deadline as a time from the create."""


class NewJob(JobTemplate):
    key: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    delayMs: Annotated[int, Field(ge=0, le=limits.MAX_DELAY_MS)] | None = None
    runAtMs: Ms | None = None
    expiresAtMs: Ms | None = None
    """The job's deadline: not finished by then, it is cancelled (at most a year ahead)."""
    traceparent: Traceparent | None = None
    """The producer's W3C trace context, handed to the worker in the claim answer so that its
    spans continue the producer's trace. Left out, the request's `traceparent` header (if
    any) applies. Not a schedule's field (`JobTemplate`): one fixed trace for every job a
    schedule makes would join unrelated runs into one trace."""

    @model_validator(mode="after")
    def _one_start_time(self) -> NewJob:
        if self.delayMs is not None and self.runAtMs is not None:
            raise ValueError("give delayMs or runAtMs, not both")
        return self


class ClaimRequest(Body):
    count: Annotated[int, Field(ge=1, le=limits.MAX_CLAIM_COUNT)]
    names: Annotated[list[JobName], Field(min_length=1, max_length=limits.MAX_CLAIM_NAMES)] | None = None
    waitMs: Annotated[int, Field(ge=0, le=limits.MAX_CLAIM_WAIT_MS)] = 0
    leaseMs: Annotated[int, Field(ge=1_000, le=limits.MAX_LEASE_MS)] | None = None


class Touch(Body):
    leaseMs: Annotated[int, Field(ge=1_000, le=limits.MAX_LEASE_MS)] | None = None


class Complete(Body):
    result: JsonValue = None


class Fail(Body):
    error: str = ""
    unrecoverable: bool = False
    retryAfterMs: Annotated[int, Field(ge=0, le=limits.MAX_RETRY_AFTER_MS)] | None = None


class Release(Body):
    pass


class ProgressSpec(Body):
    percent: Annotated[float, Field(ge=0, le=100, strict=False)]
    message: Annotated[str, utf8_at_most(limits.MAX_PROGRESS_MESSAGE)] | None = None

    @field_validator("percent", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        return value

    @field_validator("percent")
    @classmethod
    def _storable(cls, value: float) -> float:
        """Kept to `limits.PROGRESS_DECIMALS` places, so DynamoDB can hold it: 1e-300 is a
        float, but no DynamoDB number (it would fail the write, after the report's checks)."""
        return round(value, limits.PROGRESS_DECIMALS) or 0.0


class LogLine(Body):
    level: LogLevel
    message: Annotated[str, utf8_at_most(limits.MAX_LINE_BYTES)]
    source: Annotated[str, Field(max_length=256)] | None = None
    metadata: JsonValue = None

    @field_validator("metadata")
    @classmethod
    def _small(cls, value: Any) -> Any:
        if value is not None and len(dump_json(value)) > limits.MAX_LINE_BYTES:
            raise ValueError(f"must be at most {limits.MAX_LINE_BYTES} bytes of JSON")
        return value


class Report(Body):
    id: Annotated[str, Field(min_length=1, max_length=64)]
    attempt: Annotated[int, Field(ge=1, le=2**31)]
    touch: Touch | None = None
    complete: Complete | None = None
    fail: Fail | None = None
    release: Release | None = None
    progress: ProgressSpec | None = None
    event: JsonValue = None
    lines: Annotated[list[LogLine], Field(max_length=limits.MAX_LINES_PER_REPORT)] = Field(
        default_factory=list
    )

    @model_validator(mode="after")
    def _one_ending(self) -> Report:
        given = [name for name in ("touch", "complete", "fail", "release") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(
                f"give at most one of touch, complete, fail and release, not {' and '.join(given)}"
            )
        if self.event is not None and len(dump_json(self.event)) > limits.MAX_EVENT_BYTES:
            raise ValueError(f"event: must be at most {limits.MAX_EVENT_BYTES} bytes of JSON")
        return self


class NewToken(Body):
    name: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    scopes: Annotated[list[Scope], Field(min_length=1, max_length=4)]
    spaces: (
        Annotated[list[Annotated[str, Field(pattern=SPACE_PATTERN)]], Field(min_length=1, max_length=100)]
        | None
    ) = None


class NewFollowLink(Body):
    ttlMs: Annotated[int, Field(ge=limits.MIN_FOLLOW_LINK_TTL_MS, le=limits.MAX_FOLLOW_LINK_TTL_MS)] = (
        limits.DEFAULT_FOLLOW_LINK_TTL_MS
    )
    """How long the link works, from now."""


class RateSpec(Body):
    tokens: Annotated[int, Field(ge=1, le=100_000)]
    intervalMs: Annotated[int, Field(ge=limits.SECOND_MS, le=limits.DAY_MS)]


FlowLimit = Annotated[int, Field(ge=1, le=100_000)]


def _without_default(schema: dict[str, Any]) -> None:
    """A PATCH field left out keeps its value: the document shows no default for it."""
    schema.pop("default", None)


class PolicyPatch(Body):
    """A job name's policy fields to set (or the space's default policy): a field left out
    keeps its value; `null` means no limit (for `agingIntervalMs`: strict priority)."""

    concurrency: FlowLimit | None = None
    rate: RateSpec | None = None
    perKeyConcurrency: FlowLimit | None = None
    perKeyRate: RateSpec | None = None
    paused: bool = Field(default=False, json_schema_extra=_without_default)
    """True or false; left out, it keeps its value."""
    agingIntervalMs: Annotated[int, Field(ge=limits.SECOND_MS, le=limits.DAY_MS)] | None = None


Guarantee = Literal["AT_LEAST_ONCE", "AT_MOST_ONCE"]

ScheduleId = Annotated[str, Field(pattern=NAME_PATTERN)]
Overlap = Literal["ALLOW", "SKIP"]


class ScheduleBody(Body):
    """A schedule, whole (PUT): the job `job` made at each time `cron` names in `timezone`."""

    cron: Annotated[str, Field(min_length=1, max_length=256)]
    """Five fields (minute hour day-of-month month day-of-week) with `*`, lists, ranges,
    steps and names (`MON`, `JAN`); or `@hourly`, `@daily`, `@weekly`, `@monthly`, `@yearly`."""
    timezone: Annotated[str, Field(min_length=1, max_length=64)] = "UTC"
    """An IANA timezone: the cron's times are its local times."""
    job: JobTemplate
    paused: bool = False
    """Paused, it makes no jobs; fire times passed meanwhile are not made up."""
    overlap: Overlap = "ALLOW"
    """SKIP: no new job while the last one this schedule made is unfinished."""


class SchedulePatch(Body):
    """Fields of a schedule to change (PATCH): a field left out keeps its value; `job` is
    replaced whole."""

    cron: Annotated[str, Field(min_length=1, max_length=256)] = Field(
        default="", json_schema_extra=_without_default
    )
    timezone: Annotated[str, Field(min_length=1, max_length=64)] = Field(
        default="UTC", json_schema_extra=_without_default
    )
    job: JobTemplate | None = Field(default=None, json_schema_extra=_without_default)
    paused: bool = Field(default=False, json_schema_extra=_without_default)
    overlap: Overlap = Field(default="ALLOW", json_schema_extra=_without_default)

    @field_validator("job", mode="before")
    @classmethod
    def _no_null_job(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must be a job (left out, it keeps its value)")
        return value


class ScheduleTrigger(Body):
    """A job made now (`:trigger`). `key`: the job's idempotency key, so a trigger sent
    again makes no second job."""

    key: Annotated[str, Field(min_length=1, max_length=256)] | None = None


class JobDefaultsSpec(Body):
    """Options for the jobs of one name that their creator leaves out (a space's
    `jobDefaults`). Each field has the job field's own bounds, so a default is always a
    value the creator could have sent. In a PATCH, a field left out keeps its value and
    `null` removes it (the space's setting, or the built-in default, applies again)."""

    priority: Annotated[int, Field(ge=-1_000, le=1_000)] | None = None
    maxAttempts: Annotated[int, Field(ge=1, le=1_000)] | None = None
    timeoutMs: Annotated[int, Field(ge=1_000, le=43_200_000)] | None = None
    backoffMs: Annotated[int, Field(ge=0, le=limits.DAY_MS)] | None = None
    backoff: BackoffSpec | None = None
    """Replaced whole; a part left out of it is the job's, or else the space's."""
    guarantee: Guarantee | None = None
    concurrencyKey: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    delayMs: Annotated[int, Field(ge=0, le=limits.MAX_DELAY_MS)] | None = None
    """Not applied to a job that sends `runAtMs`."""
    expiresInMs: Annotated[int, Field(ge=1, le=limits.YEAR_MS)] | None = None
    """Not applied to a job that sends `expiresAtMs`."""


class OnFailureSpec(Body):
    """Where a job of the space that ends failed (or stalled) sends its notice: a new job."""

    name: JobName


NoticeStatus = Literal["COMPLETED", "FAILED", "CANCELLED", "STALLED"]


class OnSettledSpec(Body):
    """Where a job of the space that ends in one of `statuses` sends its notice: a new job."""

    name: JobName
    statuses: Annotated[list[NoticeStatus], Field(min_length=1, max_length=4)]

    @field_validator("statuses")
    @classmethod
    def _once_each(cls, statuses: list[str]) -> list[str]:
        if len(set(statuses)) != len(statuses):
            raise ValueError("must name each status at most once")
        return statuses


class SettingsPatch(Body):
    """A PATCH of a space's settings: a field given as null goes back to its default
    (for `unclaimedMs` and `maxInFlight`, null means off)."""

    maxAttempts: Annotated[int, Field(ge=1, le=1_000)] | None = None
    timeoutMs: Annotated[int, Field(ge=1_000, le=43_200_000)] | None = None
    backoffMs: Annotated[int, Field(ge=0, le=limits.DAY_MS)] | None = None
    backoff: BackoffSpec | None = None
    unclaimedMs: Annotated[int, Field(ge=limits.MINUTE_MS, le=limits.YEAR_MS)] | None = None
    keyWindowMs: Annotated[int, Field(ge=0, le=limits.MAX_KEY_WINDOW_MS)] | None = None
    maxEvents: Annotated[int, Field(ge=0, le=100_000)] | None = None
    maxInFlight: Annotated[int, Field(ge=1, le=1_000_000_000)] | None = None
    webhookSecret: Annotated[str, Field(min_length=16, max_length=256)] | None = None
    completedRetentionMs: Annotated[int, Field(ge=0, le=limits.YEAR_MS)] | None = None
    failedRetentionMs: Annotated[int, Field(ge=0, le=limits.YEAR_MS)] | None = None
    policy: PolicyPatch | None = None
    """The space's default policy, merged field by field; null: back to the built-in one."""
    jobDefaults: (
        Annotated[dict[JobName, JobDefaultsSpec | None], Field(max_length=limits.MAX_JOB_DEFAULTS_PER_PATCH)]
        | None
    ) = None
    """Defaults per job name, merged name by name and field by field: a name given as null
    loses all its defaults; `jobDefaults: null` clears every name's."""
    onFailure: OnFailureSpec | None = None
    """null: no failure notices."""
    onSettled: OnSettledSpec | None = None
    """null: no settled notices."""
    metrics: Annotated[list[JobName], Field(max_length=limits.MAX_METRICS_NAMES)] | None = None
    """The names whose own CloudWatch metrics the clock publishes (each a custom metric, billed
    as such); null or []: none."""

    @field_validator("metrics")
    @classmethod
    def _names_once(cls, names: list[str] | None) -> list[str] | None:
        if names is not None and len(set(names)) != len(names):
            raise ValueError("must name each job name at most once")
        return names


def dump_json(value: Any) -> bytes:
    """The one serialization of user JSON: compact, UTF-8, so sizes are what we store."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any, *, at: str = "") -> M:
    """Validate `data` as `model`, or raise InvalidArgument naming the field, under `at`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidArgument(describe(exc.errors(include_url=False)[0], at=at)) from None


def field_path(loc: Sequence[int | str], at: str = "") -> str:
    path = at
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def describe(error: ErrorDetails, *, at: str = "") -> str:
    """`jobs[3].delayMs: must be at most 31536000000`, from one pydantic error."""
    # Tagged-union and function-validator layers add loc parts that are not fields.
    loc = [p for p in error["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-")))]
    path = field_path(loc, at) or "body"
    return f"{path}: {_message(error)}"


_BY_TYPE = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "string_pattern_mismatch": "has characters or a length it may not have",
}


def _number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _at_most(ctx: dict[str, Any]) -> str:
    return f"must be at most {_number(ctx.get('le', ctx.get('lt')))}"


def _at_least(ctx: dict[str, Any]) -> str:
    return f"must be at least {_number(ctx.get('ge', ctx.get('gt')))}"


_BY_CONTEXT: dict[str, Callable[[dict[str, Any]], str]] = {
    # pydantic's error type -> the message, from the error's context
    "less_than_equal": _at_most,
    "less_than": _at_most,
    "greater_than_equal": _at_least,
    "greater_than": _at_least,
    "string_too_short": lambda ctx: f"must be at least {ctx['min_length']} characters",
    "string_too_long": lambda ctx: f"must be at most {ctx['max_length']} characters",
    "too_short": lambda ctx: f"must have at least {ctx['min_length']} items",
    "too_long": lambda ctx: f"must have at most {ctx['max_length']} items",
    "literal_error": lambda ctx: f"must be one of {ctx['expected']}",
}

_BY_PATTERN = {NAME_PATTERN: NAME_RULE, SPACE_PATTERN: SPACE_RULE}
"""The rule a `string_pattern_mismatch` of one of these patterns breaks, in its own words."""


def _message(error: ErrorDetails) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "string_pattern_mismatch" and ctx.get("pattern") in _BY_PATTERN:
        return _BY_PATTERN[ctx["pattern"]]
    if kind in _BY_TYPE:
        return _BY_TYPE[kind]
    if kind in _BY_CONTEXT:
        return _BY_CONTEXT[kind](ctx)
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return error["msg"]


def jobs_in(body: Any, *, traceparent_header: str | None = None) -> tuple[list[NewJob], bool]:
    """One job, an array, or {"jobs": [...]}; answers the jobs and whether it was a batch.
    `traceparent_header`: the request's `traceparent`, given to each job that has none of
    its own (a job's own field wins); refused, naming `header traceparent`, when malformed."""
    header = _header_traceparent(traceparent_header)
    jobs, batch = _jobs_in(body)
    if header is not None:
        given = {"traceparent": header}
        jobs = [j if j.traceparent is not None else j.model_copy(update=given) for j in jobs]
    return jobs, batch


def _header_traceparent(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return traceparent(value.strip(" \t"))
    except ValueError as exc:
        raise InvalidArgument(f"header traceparent: {exc}") from None


def _jobs_in(body: Any) -> tuple[list[NewJob], bool]:
    if isinstance(body, dict) and "jobs" in body and "name" not in body:
        extra = sorted(set(body) - {"jobs"})
        if extra:
            raise InvalidArgument(f"{extra[0]}: is not a known field")
        body = body["jobs"]
        if not isinstance(body, list):
            raise InvalidArgument("jobs: must be an array")
    if isinstance(body, dict):
        return [parse(NewJob, body)], False
    if not isinstance(body, list):
        raise InvalidArgument('body: must be a job, an array of jobs, or {"jobs": [...]}')
    _count("jobs", body, limits.MAX_JOBS_PER_CREATE)
    return [parse(NewJob, item, at=f"jobs[{i}]") for i, item in enumerate(body)], True


def reports_in(body: Any) -> list[Report | InvalidArgument]:
    """One report, an array, or {"reports": [...]}; each validated on its own: a report that
    breaks a rule is answered `INVALID` for its place (the error in its place here), the
    others apply. Only when every report breaks a rule is the request refused."""
    if isinstance(body, dict) and "reports" in body and "id" not in body:
        extra = sorted(set(body) - {"reports"})
        if extra:
            raise InvalidArgument(f"{extra[0]}: is not a known field")
        body = body["reports"]
        if not isinstance(body, list):
            raise InvalidArgument("reports: must be an array")
    if isinstance(body, dict):
        body = [body]
    elif not isinstance(body, list):
        raise InvalidArgument('body: must be a report, an array of reports, or {"reports": [...]}')
    else:
        _count("reports", body, limits.MAX_REPORTS_PER_REQUEST)
    parsed: list[Report | InvalidArgument] = []
    for i, raw in enumerate(body):
        try:
            parsed.append(parse(Report, raw, at=f"reports[{i}]" if len(body) > 1 else ""))
        except InvalidArgument as invalid:
            parsed.append(invalid)
    if parsed and all(isinstance(p, InvalidArgument) for p in parsed):
        first = parsed[0]
        assert isinstance(first, InvalidArgument)
        raise first
    return parsed


def ids_in(body: Any) -> list[str]:
    """An array of job ids, or {"ids": [...]}."""
    if isinstance(body, dict):
        extra = sorted(set(body) - {"ids"})
        if extra or "ids" not in body:
            raise InvalidArgument(f"{extra[0]}: is not a known field" if extra else "ids: is required")
        body = body["ids"]
    if not isinstance(body, list):
        raise InvalidArgument('ids: must be an array of job ids, or {"ids": [...]}')
    _count("ids", body, limits.MAX_CANCELS_PER_REQUEST)
    for i, item in enumerate(body):
        if not isinstance(item, str):
            raise InvalidArgument(f"ids[{i}]: must be a string")
    return body


def _count(field: str, items: list[Any], most: int) -> None:
    if not items:
        raise InvalidArgument(f"{field}: must have at least 1 item")
    if len(items) > most:
        raise InvalidArgument(f"{field}: must have at most {most} items")
