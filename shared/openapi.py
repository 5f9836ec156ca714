"""The API's OpenAPI 3.1 document, generated from the code that serves it.

Paths and methods come from `shared.routes.ROUTES`; request bodies from the pydantic
models that validate them (`shared.schema`); answers from the models every answer is
built through (`shared.answers`). Only what no model holds is written here: which
model each operation takes and answers, and its query parameters.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Annotated, Any, get_args

from pydantic import BaseModel, Field
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema

from shared import answers, limits
from shared.routes import ROUTES, Route
from shared.schema import (
    MAX_TRACEPARENT_CHARS,
    NAME_PATTERN,
    SPACE_PATTERN,
    TRACEPARENT_PATTERN,
    Body,
    ClaimRequest,
    NewFollowLink,
    NewJob,
    NewToken,
    PolicyPatch,
    Report,
    ScheduleBody,
    SchedulePatch,
    ScheduleTrigger,
    SettingsPatch,
)

VERSION = "1"
"""The API's version, as in its paths (`/v1`)."""

REF = "#/components/schemas/{model}"


# Envelopes the handlers unpack themselves (`shared.schema.jobs_in`, `reports_in`, `ids_in`);
# modelled here so the document describes them from the same item models.
class JobBatch(Body):
    jobs: Annotated[list[NewJob], Field(min_length=1, max_length=limits.MAX_JOBS_PER_CREATE)]


class ReportBatch(Body):
    reports: Annotated[list[Report], Field(min_length=1, max_length=limits.MAX_REPORTS_PER_REQUEST)]


class CancelIds(Body):
    ids: Annotated[list[str], Field(min_length=1, max_length=limits.MAX_CANCELS_PER_REQUEST)]


def _ref(model: type[BaseModel]) -> dict[str, Any]:
    return {"$ref": REF.format(model=model.__name__)}


def _one_or_many(item: type[BaseModel], batch: type[BaseModel], most: int) -> dict[str, Any]:
    return {
        "anyOf": [
            _ref(item),
            {"type": "array", "items": _ref(item), "minItems": 1, "maxItems": most},
            _ref(batch),
        ]
    }


@dataclass(frozen=True)
class Query:
    """A query parameter (or, in `Operation.headers`, a request header)."""

    name: str
    schema: dict[str, Any]
    description: str


LIMIT = Query(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": limits.MAX_LIST_LIMIT, "default": 100},
    "Most entries in the page.",
)
CURSOR = Query("cursor", {"type": "string"}, "From the previous page's `cursor`.")
TRACEPARENT_HEADER = Query(
    "traceparent",
    {"type": "string", "pattern": TRACEPARENT_PATTERN, "maxLength": MAX_TRACEPARENT_CHARS},
    "W3C Trace Context: given to each job of the request that has no `traceparent` of its own.",
)


@dataclass(frozen=True)
class Operation:
    summary: str
    scope: str | None
    """The token scope it needs (on all spaces for routes without `{space}`); None: no token."""
    answer: type[BaseModel] | dict[str, Any] | None
    """The success answer's model (or schema); None: no body."""
    errors: tuple[int, ...]
    body: type[BaseModel] | dict[str, Any] | None = None
    status: int = 200
    query: tuple[Query, ...] = ()
    headers: tuple[Query, ...] = ()
    """Request headers it reads (besides `Authorization`)."""
    description: str = ""
    error_text: tuple[tuple[int, str], ...] = ()
    """What an error status means here, where it differs from `ERROR_TEXT`."""
    anywhere: bool = False
    """A route without `{space}` that needs its scope in any one space, not on all of them."""
    media: tuple[str, ...] = ("application/json",)
    """The success answer's content types."""
    body_required: bool = True


CLIENT = (400, 401, 403)
IDS_BODY = {
    "anyOf": [
        {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": limits.MAX_CANCELS_PER_REQUEST,
        },
        _ref(CancelIds),
    ]
}
"""Job ids, as an array or `{"ids": [...]}`: what a cancel and a retry take."""
"""Every route with a token, a space or a body can be refused for each."""

OPERATIONS: dict[str, Operation] = {
    "create_jobs": Operation(
        'Create one job, an array of jobs, or {"jobs": [...]}',
        "create",
        {"anyOf": [_ref(answers.Created), _ref(answers.CreatedBatch)]},
        (*CLIENT, 429),
        body=_one_or_many(NewJob, JobBatch, limits.MAX_JOBS_PER_CREATE),
        headers=(TRACEPARENT_HEADER,),
        description="A batch is validated whole: one invalid job refuses the request and nothing "
        'is kept. One job answers `Created`; an array or `{"jobs": [...]}` answers `CreatedBatch`.',
    ),
    "list_jobs": Operation(
        "List jobs, newest first",
        "read",
        answers.JobPage,
        CLIENT,
        query=(
            Query(
                "status",
                {"type": "string", "enum": list(get_args(answers.Status))},
                "Only jobs in this status.",
            ),
            Query("name", {"type": "string", "pattern": NAME_PATTERN}, "Only jobs of this name."),
            LIMIT,
            CURSOR,
        ),
    ),
    "get_job": Operation("Read one job", "read", answers.Job, (*CLIENT, 404)),
    "list_lines": Operation(
        "Read a job's log lines, in order", "read", answers.LinePage, (*CLIENT, 404), query=(LIMIT, CURSOR)
    ),
    "list_events": Operation(
        "Read a job's events, in order", "read", answers.EventPage, (*CLIENT, 404), query=(LIMIT, CURSOR)
    ),
    "claim_jobs": Operation(
        "Claim up to `count` jobs, waiting up to `waitMs` for work",
        "work",
        answers.ClaimedJobs,
        CLIENT,
        body=ClaimRequest,
    ),
    "report_jobs": Operation(
        'Report on claimed jobs: one report, an array, or {"reports": [...]}',
        "work",
        answers.Outcomes,
        CLIENT,
        body=_one_or_many(Report, ReportBatch, limits.MAX_REPORTS_PER_REQUEST),
        description="Each report is applied on its own and has its own outcome; an invalid report "
        "in a batch is answered with an `INVALID` rejection. Only when every report is invalid is "
        "the request refused with `400`.",
    ),
    "cancel_jobs": Operation(
        "Cancel unfinished jobs by id",
        "admin",
        answers.Outcomes,
        CLIENT,
        body=IDS_BODY,
    ),
    "retry_jobs": Operation(
        "Retry failed or stalled jobs by id: a new job for each, at most once",
        "admin",
        answers.RetryOutcomes,
        (*CLIENT, 429),
        body=IDS_BODY,
        description="Each failed job gets a new job with its name, payload and options (not its "
        "key) and `retryOf` naming it; the old job does not change. A job already retried answers "
        "the same new job as `DUPLICATE`. The new jobs count against `maxInFlight` as any create.",
    ),
    "get_name_policy": Operation(
        "Read a job name's policy in force",
        "read",
        answers.NamePolicy,
        CLIENT,
        description="The space's default policy with the fields the name sets itself (`overridden`). "
        "A name has a policy before its first job.",
    ),
    "update_name_policy": Operation(
        "Set fields of a job name's policy",
        "admin",
        answers.NamePolicy,
        CLIENT,
        body=PolicyPatch,
        description="Merges the fields sent; `null` means no limit, or for `agingIntervalMs` strict "
        "priority. Applies to every claim that follows, within a second.",
    ),
    "reset_name_policy": Operation(
        "Put every field of a job name's policy back to the space's default",
        "admin",
        answers.NamePolicy,
        CLIENT,
    ),
    "get_diagnostics": Operation(
        "Each job name's pending work, policy, and why it waits",
        "read",
        answers.Diagnostics,
        (*CLIENT, 404),
        description="Every name with pending jobs or a policy of its own. Counts come from the "
        "ready index, a second behind at most, and stop at 10,000 a name (`capped`).",
    ),
    "get_metrics": Operation(
        "Each job name's last hour, a point a minute",
        "read",
        answers.Metrics,
        (*CLIENT, 404),
        query=(
            Query("name", {"type": "string", "pattern": NAME_PATTERN}, "Only this name (repeat for more)."),
        ),
        description="Created, claimed, completed, failed and cancelled jobs a minute, and the pending "
        "and running jobs at each minute's end, from the table's stream (a few seconds behind), not "
        "from CloudWatch: the same on AWS and under `emit dev`.",
    ),
    "create_follow_link": Operation(
        "Make a link to follow one job without a token",
        "read",
        answers.FollowLink,
        (*CLIENT, 404),
        body=NewFollowLink,
        status=201,
        description="The link's token lets anyone holding it read the job as `GET /v1/follow/{token}` "
        "shows it, until `expiresAtMs`; it opens nothing else. The body may be left out (a day).",
    ),
    "follow_job": Operation(
        "Follow one job with a follow link: no token, any origin",
        None,
        answers.FollowedJob,
        (400, 401, 404),
        query=(
            Query(
                "afterSeq",
                {"type": "integer", "minimum": 0, "default": 0},
                "Log lines from this seq on: the last answer's `nextSeq`.",
            ),
            Query(
                "waitMs",
                {"type": "integer", "minimum": 0, "maximum": limits.MAX_FOLLOW_WAIT_MS, "default": 0},
                "With `version`: wait up to this long for the job to change.",
            ),
            Query("version", {"type": "string"}, "The last answer's `version`."),
        ),
        description="Answers at once, or with `waitMs` and `version` as soon as the job's version "
        "differs from `version` (or lines from `afterSeq` are there), else when the wait ends. "
        "CORS allows any origin. Never shows the payload, key, callback or events.",
        error_text=(
            (401, "The link is forged, altered or expired."),
            (404, "The job is past its retention."),
        ),
    ),
    "list_spaces": Operation(
        "List the spaces the token may use, in name order",
        "read",
        answers.SpaceList,
        CLIENT,
        query=(LIMIT, CURSOR),
        description="A token limited to some spaces sees those of them that exist; `inFlight` is "
        "null while a space has no `maxInFlight`.",
        anywhere=True,
    ),
    "get_space": Operation("Read a space's settings", "admin", answers.Space, (*CLIENT, 404)),
    "update_space": Operation(
        "Change a space's settings (creates the space)", "admin", answers.Space, CLIENT, body=SettingsPatch
    ),
    "create_token": Operation(
        "Mint a token; its secret is in this answer only",
        "admin",
        answers.MintedToken,
        CLIENT,
        body=NewToken,
        status=201,
    ),
    "list_tokens": Operation("List tokens, without secrets", "admin", answers.TokenList, (401, 403)),
    "list_schedules": Operation(
        "List a space's schedules, by id",
        "read",
        answers.SchedulePage,
        CLIENT,
        query=(
            Query(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": limits.MAX_SCHEDULES_PER_PAGE, "default": 50},
                "Most schedules in the page.",
            ),
            CURSOR,
        ),
    ),
    "get_schedule": Operation(
        "Read a schedule, with its next fire times and its last run",
        "read",
        answers.Schedule,
        (*CLIENT, 404),
    ),
    "put_schedule": Operation(
        "Create or replace a schedule",
        "admin",
        answers.Schedule,
        CLIENT,
        body=ScheduleBody,
        description="Each time `cron` names in `timezone` makes one job from `job`, exactly once, "
        "even when the clock fires twice or late. A replaced schedule keeps its `createdAtMs` and "
        "`lastRun`; a fire time just due is kept while `cron` and `timezone` stay the same.",
    ),
    "update_schedule": Operation(
        "Change fields of a schedule: pause, resume, a new cron, timezone, job or overlap",
        "admin",
        answers.Schedule,
        (*CLIENT, 404),
        body=SchedulePatch,
        description="Merges the fields sent (`job` is replaced whole). A resumed schedule fires "
        "from its next time after now: the times passed while paused are not made up.",
    ),
    "delete_schedule": Operation(
        "Delete a schedule (the jobs it made stay)", "admin", None, (*CLIENT, 404), status=204
    ),
    "trigger_schedule": Operation(
        "Make one job of a schedule now",
        "admin",
        answers.Created,
        (*CLIENT, 404, 429),
        body=ScheduleTrigger,
        body_required=False,
        description="Whatever its times, `paused` and `overlap`; the job carries `schedule` with "
        "`atMs` the time of the trigger, and becomes the schedule's `lastRun`. With `key`, a "
        "trigger sent again answers the same job (DUPLICATE). A full space answers 429.",
    ),
    "revoke_token": Operation("Revoke a token", "admin", None, (401, 403, 404), status=204),
    "get_openapi": Operation("This document", None, {"type": "object"}, ()),
    "get_dashboard": Operation(
        "The dashboard: a page that signs in with a token and then uses this API",
        None,
        {"type": "string"},
        (),
        media=("text/html",),
    ),
    "get_dashboard_file": Operation(
        "The dashboard's script (`app.js`) and style sheet (`app.css`)",
        None,
        {"type": "string"},
        (404,),
        media=("text/javascript", "text/css"),
    ),
}

ERROR_TEXT = {
    400: "A body, field, query parameter or path part breaks a rule; the message names it.",
    401: "No bearer token, or an unknown or revoked one.",
    403: "The token lacks the scope, or the space.",
    404: "No such resource.",
    429: "The space is at its `maxInFlight`: try again after `retryAfterMs`.",
    500: "A fault of the service; it is logged, and the message says nothing more.",
}


class _Schemas(GenerateJsonSchema):
    """Field titles repeat the field names; left out, the document reads more easily."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _models() -> list[tuple[type[BaseModel], JsonSchemaMode]]:
    found: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (answers.Error, "serialization"),
        (answers.Exhausted, "serialization"),
    ]
    for op in OPERATIONS.values():
        if isinstance(op.body, type):
            found.append((op.body, "validation"))
        if isinstance(op.answer, type):
            found.append((op.answer, "serialization"))
    found += [(m, "validation") for m in (NewJob, JobBatch, Report, ReportBatch, CancelIds)]
    found += [(m, "serialization") for m in (answers.Created, answers.CreatedBatch)]
    return list(dict.fromkeys(found))


def _content(schema: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(schema) if isinstance(schema, type) else schema}}


def _answers(op: Operation, *, with_path_parameters: bool) -> dict[str, Any]:
    """The operation's answers; 404 on every route with a path part, which a path part no
    route takes (a quote, a backslash, a raw non-ASCII character) is answered with."""
    out: dict[str, Any] = {}
    success: dict[str, Any] = {"description": op.summary}
    if op.answer is not None:
        (schema,) = _content(op.answer).values()
        success["content"] = dict.fromkeys(op.media, schema)
    out[str(op.status)] = success
    errors = sorted({*op.errors, 404}) if with_path_parameters else op.errors
    for status in (*errors, 500):
        error: dict[str, Any] = {
            "description": dict(op.error_text).get(status, ERROR_TEXT[status]),
            "content": _content(answers.Exhausted if status == 429 else answers.Error),
        }
        if status == 429:
            error["headers"] = {
                "Retry-After": {
                    "description": "Whole seconds to wait: `retryAfterMs`, rounded up.",
                    "required": True,
                    "schema": {"type": "integer", "minimum": 1},
                }
            }
        out[str(status)] = error
    return out


def _path_parameters(route: Route) -> list[dict[str, Any]]:
    out = []
    for name in re.findall(r"\{(\w+)\}", route.path):
        schema: dict[str, Any] = {"type": "string", "minLength": 1}
        if name == "space":
            schema = {"type": "string", "pattern": SPACE_PATTERN}
        elif name == "name" or (name == "id" and "/schedules/" in route.path):
            schema = {"type": "string", "pattern": NAME_PATTERN}
        out.append({"name": name, "in": "path", "required": True, "schema": schema})
    return out


def _operation(route: Route) -> dict[str, Any]:
    op = OPERATIONS[route.function]
    where = "in the space" if "{space}" in route.path else "on all spaces"
    if op.anywhere:
        where = "in any space"
    needs = "Needs no token."
    if op.scope is not None:
        holds = "" if op.scope == "admin" else " (or `admin`, which holds every scope)"
        needs = f"Needs a token with the `{op.scope}` scope{holds} {where}."
    out: dict[str, Any] = {
        "operationId": route.function,
        "summary": op.summary,
        "description": " ".join(part for part in (op.description, needs) if part),
    }
    given = [("query", q) for q in op.query] + [("header", h) for h in op.headers]
    parameters = _path_parameters(route) + [
        {"name": p.name, "in": at, "required": False, "schema": p.schema, "description": p.description}
        for at, p in given
    ]
    if parameters:
        out["parameters"] = parameters
    if op.body is not None:
        out["requestBody"] = {"required": op.body_required, "content": _content(op.body)}
    out["responses"] = _answers(op, with_path_parameters="{" in route.path)
    if route.public:
        out["security"] = []
    return out


@functools.cache
def document() -> dict[str, Any]:
    """The whole document; built once per process (a few ms), then served as it is."""
    _, schemas = models_json_schema(_models(), ref_template=REF, schema_generator=_Schemas)
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "emit",
            "version": VERSION,
            "summary": "A job queue in your own AWS account.",
            "description": "Times are Unix milliseconds; fields that hold times end in `Ms`. "
            'Job ids are ULIDs. Every error is `{"code", "message"}`, and the message '
            "names the field that is wrong.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas["$defs"],
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
