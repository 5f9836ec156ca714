"""The runtime's settings: one frozen model, each field with its environment variable,
its default (the value on AWS), its local value (under `emit dev` and the tests) and why.

The CDK app writes the functions' environment from it (`Config.environment`), the deployed
functions read it back (`Config.from_env`), and `emit dev` starts from `Config.local()`.
A setting's number is written here and nowhere else; the contract's own limits, which
bound some of them, stay in `shared.limits`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from shared import limits

_SAME: Any = object()


@dataclass(frozen=True)
class Env:
    """A field's environment variable and, where `emit dev` differs from AWS, its local value and why."""

    name: str
    local: Any = _SAME
    local_why: str = ""
    by_stack: bool = False
    """The stack sets it (a name it makes), not the default."""


class Config(BaseModel):
    """Every setting of a running emit. Build it with `from_env` (a deployed function),
    `local()` (`emit dev`, the tests) or by hand; `model_copy(update=...)` changes a field."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    # -- where things are -----------------------------------------------------------------

    table: Annotated[
        str, Env("EMIT_TABLE", local="emit", local_why="the embedded DynamoDB's table", by_stack=True)
    ]
    """The DynamoDB table: the stack names it (no default, a function without it fails at once)."""
    bucket: Annotated[
        str | None, Env("EMIT_BUCKET", local="emit-blobs", local_why="in moto's in-memory S3", by_stack=True)
    ] = None
    """The S3 bucket of values too large for an item (set by the stack); None: there are none."""
    dynamodb_endpoint: Annotated[
        str | None,
        Env("EMIT_DYNAMODB_ENDPOINT", local_why="`emit dev --dynamodb-endpoint URL` sets it"),
    ] = None
    """A DynamoDB-compatible endpoint (DynamoDB Local, say); None: the region's own."""
    s3_endpoint: Annotated[str | None, Env("EMIT_S3_ENDPOINT")] = None
    """An S3-compatible endpoint; None: the region's own."""
    callback_queue_url: Annotated[str | None, Env("EMIT_CALLBACK_QUEUE_URL", by_stack=True)] = None
    """The callback sender's SQS queue. The stack sets it on the functions that hand
    callbacks over (the stream's and the clock's) only; None: the sender runs in this
    process (`emit dev`'s threads, or the tests by hand)."""

    # -- claims ---------------------------------------------------------------------------

    claim_wait_ms: Annotated[
        int,
        Env(
            "EMIT_MAX_WAIT_MS",
            local=limits.MAX_CLAIM_WAIT_MS,
            local_why="no gateway in front: the contract's maximum",
        ),
    ] = Field(25_000, ge=0, le=limits.MAX_CLAIM_WAIT_MS)
    """The longest a claim waits for work. On AWS a long poll gives up after 25 s, so with
    its last poll, the reads of the jobs it won and the answer it still finishes inside the
    claim function's 29 s timeout, itself over before the gateway's 30 s [1.1]."""
    poll_ms: Annotated[
        int, Env("EMIT_POLL_MS", local=50, local_why="local reads cost nothing: tests see new work sooner")
    ] = Field(250, ge=1)
    """How soon a waiting claim (or follow) first looks again (the pause then doubles while
    nothing comes): a job created while a worker waits is handed out within about a
    quarter second, for about 4 reads a second per waiting worker."""
    poll_max_ms: Annotated[
        int,
        Env("EMIT_POLL_MAX_MS", local=200, local_why="local reads cost nothing: tests see new work sooner"),
    ] = Field(1_000, ge=1)
    """The longest pause between a waiting claim's (or follow's) looks: how late it may see
    new work (or a follower a change)."""
    claim_payload_bytes: Annotated[
        int,
        Env(
            "EMIT_CLAIM_PAYLOAD_BYTES",
            local=limits.MAX_CLAIM_PAYLOAD_BYTES,
            local_why="no Lambda response limit: the contract's maximum",
        ),
    ] = Field(5 * limits.MIB, ge=1, le=limits.MAX_CLAIM_PAYLOAD_BYTES)
    """Where a claim's answer stops (the rest stay for the next claim): 6 MB, a Lambda
    response's most [2.1], less the JSON around the payloads."""

    # -- caches ---------------------------------------------------------------------------

    settings_cache_ms: Annotated[
        int,
        Env("EMIT_SETTINGS_CACHE_MS", local=0, local_why="one process: a PATCH applies to the next request"),
    ] = Field(2_000, ge=0)
    """A warm function reads a space's settings at most this often; a PATCH takes effect
    everywhere within it."""
    policy_cache_ms: Annotated[int, Env("EMIT_POLICY_CACHE_MS")] = Field(
        limits.SECOND_MS, ge=0, le=limits.SECOND_MS
    )
    """At most a second: a name's policy change applies to every claim that follows within it."""

    # -- the clock ------------------------------------------------------------------------

    clock_tick_ms: Annotated[
        int,
        Env(
            "EMIT_CLOCK_TICK_MS",
            local=limits.SECOND_MS,
            local_why="a thread ticks it: tests need not wait a minute",
        ),
    ] = Field(limits.MINUTE_MS, ge=1)
    """How far apart the clock's ticks are (leases, deadlines, callback retries): on AWS,
    EventBridge Scheduler's finest rate, once a minute [5.1, 5.2]."""
    unclaimed_every_ms: Annotated[
        int,
        Env("EMIT_UNCLAIMED_EVERY_MS", local=limits.SECOND_MS, local_why="the clock ticks every second"),
    ] = Field(limits.MINUTE_MS, ge=1)
    """The period of a name's never-claimed checks (`shared.unclaimed`): a job fails at most
    this late past its `unclaimedMs` (on AWS, the clock's own minute), and a name with jobs
    arriving all day is looked at once or twice a period, not once a job."""
    recount_every_ms: Annotated[int, Env("EMIT_RECOUNT_EVERY_MS")] = Field(limits.DAY_MS, ge=limits.MINUTE_MS)
    """How often the clock recounts the gauges of a space the stream counted records of
    (`shared.recount`): what heals a count left short by a batch lost to the dead-letter queue."""
    recount_settle_ms: Annotated[
        int,
        Env(
            "EMIT_RECOUNT_SETTLE_MS",
            local=10 * limits.SECOND_MS,
            local_why="emit dev's stream hands a batch over at once, or drops it within its three tries",
        ),
    ] = Field(limits.HOUR_MS + 10 * limits.MINUTE_MS, ge=0)
    """How long after its survey a recount settles: longer than the stream's maximum record
    age (`infra.constants.STREAM_MAX_RECORD_AGE_S`), by when every record of a job's move
    the survey saw has been counted or dropped."""
    book_shards: Annotated[int, Env("EMIT_BOOK_SHARDS")] = Field(limits.BOOK_SHARDS, ge=1)
    """The write shards of each time slot (a clock tick) of the lease, deadline and timer
    books (`limits.BOOK_SHARDS` says why so many); a tick reads only those its slots' maps name."""

    # -- access ---------------------------------------------------------------------------

    allow_private_callbacks: Annotated[
        bool,
        Env(
            "EMIT_ALLOW_PRIVATE_CALLBACKS",
            local=True,
            local_why="a receiver on 127.0.0.1 is the point",
        ),
    ] = False
    """Whether a callback may target a private or loopback address; on AWS it may not (the
    function would reach into its own network)."""
    dev_token: Annotated[str | None, Env("EMIT_DEV_TOKEN")] = None
    """A token accepted as admin of every space (`emit dev`; without it, it mints one and
    prints it). Never set on AWS."""

    # -- wake (issue 19: shared.wake) ------------------------------------------------------

    wake_url: Annotated[
        str | None,
        Env("EMIT_WAKE_URL", local_why="`emit dev` sets it to its own wake address", by_stack=True),
    ] = None
    """Where workers listen for hints (`wakeUrl`: the WebSocket API's stage URL). The stack
    sets it on the functions that answer it or post hints (`https://` of the same host and
    path is the connections' management endpoint); None: no wake, workers long-poll."""
    wake_later_function: Annotated[str | None, Env("EMIT_WAKE_LATER_FUNCTION", by_stack=True)] = None
    """The function that sends a hint a little later, and makes a hint's posts apart from
    the functions that hint (`functions/wake_later.py`, invoked without waiting): the stack
    sets it on those (the stream's, the clock's, the name policy's writes); None: hints put
    off run in this process (`emit dev`'s thread) or not at all, and posts are made by the
    caller."""

    # -- reading and writing --------------------------------------------------------------

    @classmethod
    def env(cls, field: str) -> Env:
        """The environment variable (and local value) of `field`."""
        return _env(cls.model_fields[field])

    @classmethod
    def default(cls, field: str) -> Any:
        """`field`'s value on AWS."""
        return cls.model_fields[field].default

    @classmethod
    def from_env(cls, env: Mapping[str, str], base: Config | None = None) -> Config:
        """The settings `env` sets (an empty value is unset); the rest as in `base`, or
        their defaults."""
        values: dict[str, Any] = {} if base is None else base.model_dump()
        for name, field in cls.model_fields.items():
            value = env.get(_env(field).name)
            if value:
                values[name] = value
        return cls.model_validate(values)

    @classmethod
    def local(cls) -> Config:
        """`emit dev`'s settings, and the tests': the defaults, but where a field's `Env`
        gives a local value (and why)."""
        return _local()

    def environment(self) -> dict[str, str]:
        """The variables `from_env` reads back as these settings (None: left unset)."""
        return {
            _env(field).name: _text(value)
            for name, field in type(self).model_fields.items()
            if (value := getattr(self, name)) is not None
        }


def _env(field: FieldInfo) -> Env:
    return next(m for m in field.metadata if isinstance(m, Env))


def _text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@cache
def _local() -> Config:
    return Config.model_validate(
        {
            name: env.local
            for name, field in Config.model_fields.items()
            if (env := _env(field)).local is not _SAME
        }
    )


def markdown_table() -> str:
    """The README's configuration table: every field's variable, values and reasons."""
    local = Config.local()
    rows = ["| variable | on AWS | `emit dev` | what it is |", "| --- | --- | --- | --- |"]
    for name, field in Config.model_fields.items():
        env = _env(field)
        default = "set by the stack" if env.by_stack else _cell(field.default)
        here = _cell(getattr(local, name))
        if env.local_why:
            here += f" ({env.local_why})"
        why = " ".join((field.description or "").split())
        rows.append(f"| `{env.name}` | {default} | {here} | {why} |")
    return "\n".join(rows) + "\n"


README_BEGIN = "<!-- config:begin (python -m shared.config writes this table) -->"
README_END = "<!-- config:end -->"


def readme_with_table(text: str) -> str:
    """`text` (the README) with its configuration table as `markdown_table` makes it."""
    start, end = text.index(README_BEGIN) + len(README_BEGIN), text.index(README_END)
    return text[:start] + "\n" + markdown_table() + text[end:]


def _cell(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{_text(value)}`"
    if isinstance(value, int):
        return f"{value:,}"
    return f"`{value}`"


if __name__ == "__main__":
    from pathlib import Path

    readme = Path(__file__).resolve().parents[1] / "README.md"
    readme.write_text(readme_with_table(readme.read_text()))
