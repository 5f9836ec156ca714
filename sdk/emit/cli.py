"""The `emit` command: `emit jobs ...`, `emit names ...`, `emit schedules ...`, `emit spaces
list` and `emit tokens ...` on the SDK, and `emit dev`.

`emit dev` runs the service locally; the SDK alone carries no server, so it needs the
service installed beside it (`pip install "emit-service[local]"` from the same checkout, or
`make dev` in the repository).

Every command takes `--url`, `--token` (and for jobs, names and schedules `--space`), defaulting to
`EMIT_URL`, `EMIT_TOKEN` and `EMIT_SPACE`, `--json` to print the API's JSON for scripts, and
`--color`/`--no-color` (colour is on only on a terminal, without `NO_COLOR`, and never with
`--json`). Durations take a unit (`500ms`, `10s`, `5m`, `2h`, `1d`), instants ISO 8601 with a
timezone or `+10m` from now (`emit.cli_types`). Exit statuses: `EXIT_CODES`, which `--help`
lists whole.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from emit import cli_types
from emit.client import Emit
from emit.display import (
    FollowView,
    Style,
    colour_wanted,
    diagnostics_rows,
    job_details,
    job_rows,
    policy_details,
    schedule_details,
    schedule_rows,
    table,
    token_rows,
)
from emit.errors import EmitError
from emit.models import Callback, Job, Line
from emit.names import Policy
from emit.schedules import JobTemplate, Schedule
from emit.transport import VERSION
from emit.units import Duration

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_CANCELLED = 4
EXIT_STALLED = 5
"""An at-most-once job whose lease ended without a report: it may or may not have run."""
EXIT_INTERRUPTED = 130

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done (`jobs follow`: the job completed)",
    EXIT_ERROR: "emit refused the call or could not be reached (`jobs cancel`/`retry`: one id was refused)",
    EXIT_USAGE: "a usage error: a bad flag or value, or no URL, token or space "
    "(--url/EMIT_URL, --token/EMIT_TOKEN, --space/EMIT_SPACE); `emit dev` without the service installed",
    EXIT_FAILED: "`jobs follow`: the job failed",
    EXIT_CANCELLED: "`jobs follow`: the job was cancelled (or expired)",
    EXIT_STALLED: "`jobs follow`: an at-most-once job stalled (it may or may not have run)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}
"""Every status the command exits with (but `emit dev`'s own, see `emit dev --help`)."""

FINISHED_EXIT = {
    "completed": EXIT_OK,
    "failed": EXIT_FAILED,
    "cancelled": EXIT_CANCELLED,
    "stalled": EXIT_STALLED,
}
"""How `jobs follow` exits, by the job's final status."""

_REMOVED_FLAGS = {
    "--delay-ms": "--delay 10s",
    "--run-at-ms": "--run-at 2026-12-02T17:00:00+01:00 (or +10m)",
    "--timeout-ms": "--timeout 5m",
    "--backoff-ms": "--backoff 30s",
    "--expires-in-ms": "--expires-in 1h",
    "--expires-at-ms": "--expires-at 2026-12-02T17:00:00Z (or +1h)",
    "--aging-interval-ms": "--aging-interval 30s",
}
"""The flags in ms before durations took units: named in the error, to say what replaced them."""


class NotConfigured(ValueError):
    """No URL, token or space, from the flags or the environment."""


Command = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["dev"]:
        return _dev(argv[1:])
    removed = _removed_flag(argv)
    if removed:
        print(f"emit: {removed}", file=sys.stderr)
        return EXIT_USAGE
    args = _parser().parse_args(argv)
    try:
        command: Command = args.command
        return command(args)
    except EmitError as exc:
        print(f"emit: {exc.code}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ValueError as exc:  # missing configuration, a payload that is not JSON
        print(f"emit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _removed_flag(argv: list[str]) -> str | None:
    for arg in argv:
        flag = arg.partition("=")[0]
        if flag in _REMOVED_FLAGS:
            return f"{flag} is gone: durations and times take units now, e.g. {_REMOVED_FLAGS[flag]}"
    return None


def _dev(argv: list[str]) -> int:
    try:
        from devserver.cli import main as dev_main
    except ImportError:
        print(
            "emit dev needs the service installed beside the SDK: "
            "pip install 'emit-service[local]' from the emit repository (README: Testing your workers), "
            "or run `make dev` there.",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return dev_main(argv)


# -- the commands ---------------------------------------------------------------------


def _client(args: argparse.Namespace, *, in_space: bool = True, room_wait: Duration = 60.0) -> Emit:
    url = _setting(args.url, "EMIT_URL", "--url", "no URL", " (`emit dev`: http://127.0.0.1:8787)")
    token = _setting(args.token, "EMIT_TOKEN", "--token", "no token")
    space = _setting(args.space, "EMIT_SPACE", "--space", "no space") if in_space else None
    return Emit(url, token, space, room_wait=room_wait)


def _setting(given: str | None, variable: str, flag: str, missing: str, hint: str = "") -> str:
    value = given or os.environ.get(variable)
    if not value:
        raise NotConfigured(f"{missing}: give {flag} or set {variable}{hint}")
    return value


def _style(args: argparse.Namespace) -> Style:
    return Style(colour_wanted(sys.stdout, json_output=args.json, forced=args.color))


def jobs_create(args: argparse.Namespace) -> int:
    payload = _json_argument("payload", args.payload)
    callback = None
    if args.callback_url:
        callback = Callback(args.callback_url, dict(_pair(h) for h in args.callback_header))
    elif args.callback_header:
        raise ValueError("--callback-header: give --callback-url too")
    with _client(args, room_wait=args.room_wait) as client:
        created = client.jobs.create(
            args.name,
            payload,
            key=args.key,
            delay=args.delay,
            run_at=args.run_at,
            max_attempts=args.max_attempts,
            timeout=args.timeout,
            backoff=args.backoff,
            callback=callback,
            priority=args.priority,
            concurrency_key=args.concurrency_key,
            expires_at=args.expires_at,
            expires_in=args.expires_in,
        )
    _print(args, created.raw, lambda: print(f"{created.id} {created.outcome}"))
    return EXIT_OK


def jobs_get(args: argparse.Namespace) -> int:
    with _client(args) as client:
        job = client.jobs.get(args.id)
    _print(args, job.raw, lambda: job_details(job, sys.stdout, _style(args)))
    return EXIT_OK


def jobs_list(args: argparse.Namespace) -> int:
    """A page (`--limit`, from `--cursor`), its next cursor on stderr; `--all` every page."""
    size = args.limit or (100 if args.all else 20)
    jobs: list[Job] = []
    cursor = args.cursor
    with _client(args) as client:
        while True:
            page, cursor = _job_page(client, args, size, cursor)
            jobs += page
            if not args.all or cursor is None or not page:
                break
    _print(args, [j.raw for j in jobs], lambda: table(job_rows(jobs), sys.stdout, _style(args)))
    if cursor is not None and not args.all:
        print(f"more: emit jobs list --cursor {cursor} (with the same filters)", file=sys.stderr)
    return EXIT_OK


def _job_page(
    client: Emit, args: argparse.Namespace, size: int, cursor: str | None
) -> tuple[list[Job], str | None]:
    """One page of the space's jobs and its next cursor."""
    page = client.jobs.page(status=args.status, name=args.name, limit=size, cursor=cursor)
    return page.jobs, page.cursor


def jobs_cancel(args: argparse.Namespace) -> int:
    with _client(args) as client:
        outcomes = client.jobs.cancel(*args.ids)
    rows = [("ID", "STATUS", "MESSAGE")] + [
        (
            job_id,
            o.status or (o.rejection.reason if o.rejection else ""),
            o.rejection.message if o.rejection else "",
        )
        for job_id, o in zip(args.ids, outcomes, strict=True)
    ]
    _print(args, [o.raw for o in outcomes], lambda: table(rows, sys.stdout, _style(args)))
    return EXIT_OK if all(o.rejection is None for o in outcomes) else EXIT_ERROR


def jobs_retry(args: argparse.Namespace) -> int:
    """One row per id: the new job and `new` (or `duplicate`: retried before), or why none."""
    with _client(args) as client:
        outcomes = client.jobs.retry(*args.ids)
    rows = [("ID", "NEW JOB", "OUTCOME", "MESSAGE")] + [
        (
            job_id,
            o.id or "-",
            o.outcome or (o.rejection.reason if o.rejection else ""),
            o.rejection.message if o.rejection else "",
        )
        for job_id, o in zip(args.ids, outcomes, strict=True)
    ]
    _print(args, [o.raw for o in outcomes], lambda: table(rows, sys.stdout, _style(args)))
    return EXIT_OK if all(o.rejection is None for o in outcomes) else EXIT_ERROR


def jobs_follow(args: argparse.Namespace) -> int:
    """Follow until the job finishes; the exit status says how it finished."""
    view = FollowView(sys.stdout, live=sys.stdout.isatty() and not args.json, style=_style(args))
    last: Job | None = None
    with _client(args) as client:
        try:
            for update in client.jobs.follow(args.id, interval=args.interval.total_seconds()):
                if isinstance(update, Line):
                    _stream(args, "line", update.raw, functools.partial(view.line, update))
                else:
                    last = update
                    _stream(args, "job", update.raw, functools.partial(view.job, update))
        finally:
            view.close()
    return EXIT_OK if last is None else FINISHED_EXIT.get(last.status, EXIT_CANCELLED)


def _show_policy(args: argparse.Namespace, policy: Policy) -> int:
    _print(args, policy.raw, lambda: policy_details(policy, sys.stdout, _style(args)))
    return EXIT_OK


def names_policy(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_policy(args, client.names.policy(args.name))


_POLICY_OPTIONS = ("concurrency", "rate", "per_key_concurrency", "per_key_rate", "aging_interval")


def names_set(args: argparse.Namespace) -> int:
    fields = {f: getattr(args, f) for f in _POLICY_OPTIONS if getattr(args, f) is not _UNSET}
    if not fields:
        raise ValueError("names set: give at least one field to set (see emit names set --help)")
    with _client(args) as client:
        return _show_policy(args, client.names.update(args.name, **fields))


def names_pause(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_policy(args, client.names.pause(args.name))


def names_resume(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_policy(args, client.names.resume(args.name))


def names_reset(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_policy(args, client.names.reset(args.name))


def names_diagnostics(args: argparse.Namespace) -> int:
    with _client(args) as client:
        names = client.diagnostics()
    _print(args, [n.raw for n in names], lambda: table(diagnostics_rows(names), sys.stdout, _style(args)))
    return EXIT_OK


_UNSET = object()


def _show_schedule(args: argparse.Namespace, schedule: Schedule) -> int:
    _print(args, schedule.raw, lambda: schedule_details(schedule, sys.stdout, _style(args)))
    return EXIT_OK


def _job_template(args: argparse.Namespace) -> JobTemplate | None:
    """`--job` (the API's JSON), or `--name` with an optional `--payload`; None: neither."""
    if args.job is not None:
        if args.name is not None or args.payload is not None:
            raise ValueError("--job: give it alone, or --name (and --payload) instead")
        job = _json_argument("job", args.job)
        if not isinstance(job, dict) or "name" not in job:
            raise ValueError('--job: a JSON object with a "name" (the API\'s job template)')
        return JobTemplate.from_api(job)
    if args.name is not None:
        return JobTemplate(args.name, _json_argument("payload", args.payload))
    if args.payload is not None:
        raise ValueError("--payload: give --name too (the job is replaced whole)")
    return None


def schedules_put(args: argparse.Namespace) -> int:
    job = _job_template(args)
    if job is None:
        raise ValueError("schedules put: give --job, or --name (and --payload)")
    with _client(args) as client:
        schedule = client.schedules.put(
            args.id,
            cron=args.cron,
            job=job,
            timezone=args.timezone,
            paused=args.paused,
            overlap=args.overlap,
        )
    return _show_schedule(args, schedule)


def schedules_update(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {f: getattr(args, f) for f in ("cron", "timezone", "overlap")}
    fields = {f: v for f, v in fields.items() if v is not None}
    job = _job_template(args)
    if job is not None:
        fields["job"] = job
    if not fields:
        raise ValueError(
            "schedules update: give at least one field to change (see emit schedules update --help)"
        )
    with _client(args) as client:
        return _show_schedule(args, client.schedules.update(args.id, **fields))


def schedules_get(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_schedule(args, client.schedules.get(args.id))


def schedules_pause(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_schedule(args, client.schedules.pause(args.id))


def schedules_resume(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_schedule(args, client.schedules.resume(args.id))


def schedules_list(args: argparse.Namespace) -> int:
    with _client(args) as client:
        found = list(client.schedules.list(limit=args.limit))
    _print(args, [s.raw for s in found], lambda: table(schedule_rows(found), sys.stdout, _style(args)))
    return EXIT_OK


def schedules_trigger(args: argparse.Namespace) -> int:
    with _client(args, room_wait=args.room_wait) as client:
        created = client.schedules.trigger(args.id, key=args.key)
    _print(args, created.raw, lambda: print(f"{created.id} {created.outcome}"))
    return EXIT_OK


def schedules_delete(args: argparse.Namespace) -> int:
    with _client(args) as client:
        client.schedules.delete(args.id)
    _print(args, {"id": args.id, "deleted": True}, lambda: print(f"deleted {args.id}"))
    return EXIT_OK


def spaces_list(args: argparse.Namespace) -> int:
    with _client(args, in_space=False) as client:
        spaces = list(client.spaces.list(limit=args.limit))
    rows = [("SPACE", "IN FLIGHT")] + [(s.name, str(s.in_flight)) for s in spaces]
    _print(
        args,
        [{"name": s.name, "inFlight": s.in_flight} for s in spaces],
        lambda: table(rows, sys.stdout, _style(args)),
    )
    return EXIT_OK


def tokens_create(args: argparse.Namespace) -> int:
    with _client(args, in_space=False) as client:
        minted = client.tokens.create(args.scope, spaces=args.space or None, name=args.name)
    token = minted.token

    def human() -> None:
        print(minted.secret)
        where = ", ".join(token.spaces) if token.spaces is not None else "every space"
        print(
            f"token {token.id}: {', '.join(token.scopes)} on {where}; the secret above is shown only once",
            file=sys.stderr,
        )

    _print(args, token.raw, human)
    return EXIT_OK


def tokens_list(args: argparse.Namespace) -> int:
    with _client(args, in_space=False) as client:
        tokens = client.tokens.list()
    _print(args, [t.raw for t in tokens], lambda: table(token_rows(tokens), sys.stdout, _style(args)))
    return EXIT_OK


def tokens_revoke(args: argparse.Namespace) -> int:
    with _client(args, in_space=False) as client:
        client.tokens.revoke(args.id)
    _print(args, {"id": args.id, "revoked": True}, lambda: print(f"revoked {args.id}"))
    return EXIT_OK


# -- output ---------------------------------------------------------------------------


def _print(args: argparse.Namespace, raw: Any, human: Callable[[], None]) -> None:
    if args.json:
        print(json.dumps(raw, ensure_ascii=False))
    else:
        human()


def _stream(args: argparse.Namespace, kind: str, raw: Any, human: Callable[[], None]) -> None:
    """JSON lines for `--json` (`{"job": ...}` or `{"line": ...}`), so a script can stream them."""
    if args.json:
        print(json.dumps({kind: raw}, ensure_ascii=False), flush=True)
    else:
        human()


def _json_argument(what: str, text: str | None) -> Any:
    if text is None:
        return None
    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"{what}: not JSON (a string needs its quotes: '\"text\"')") from None


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--callback-header: {text!r} is not NAME=VALUE")
    return name, value


# -- the parser -----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument("--url", help="the API's URL (default: $EMIT_URL)")
    connection.add_argument("--token", help="an API token (default: $EMIT_TOKEN)")
    connection.add_argument("--json", action="store_true", help="print the API's JSON, for scripts")
    connection.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        help="colour statuses and headers (default: on a terminal without NO_COLOR; never with --json)",
    )
    in_space = argparse.ArgumentParser(add_help=False, parents=[connection])
    in_space.add_argument("--space", help="the space (default: $EMIT_SPACE)")

    parser = argparse.ArgumentParser(
        prog="emit",
        description="The emit job queue.",
        epilog=exit_codes_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"emit {VERSION}")
    commands = parser.add_subparsers(
        title="commands", required=True, metavar="{jobs,names,schedules,spaces,tokens,dev}"
    )
    commands.add_parser("dev", help="run the whole service locally (emit dev --help)")

    jobs = commands.add_parser("jobs", help="create, read, follow, cancel and retry jobs").add_subparsers(
        title="commands", required=True
    )
    create = _leaf(jobs, "create", jobs_create, in_space, "create a job")
    create.add_argument("name", help="the job's name: what kind of work it is")
    create.add_argument("payload", nargs="?", help="its payload as JSON, or - to read it from stdin")
    create.add_argument("--key", help="an idempotency key: a repeat answers the earlier job")
    start = create.add_mutually_exclusive_group()
    start.add_argument(
        "--delay",
        type=cli_types.duration,
        metavar="DURATION",
        help="not claimable before now + this (10s, 5m)",
    )
    start.add_argument(
        "--run-at",
        type=cli_types.instant,
        metavar="TIME",
        help="not claimable before this time (ISO 8601 with a timezone, or +10m)",
    )
    create.add_argument("--max-attempts", type=int, help="failed attempts before the job fails")
    create.add_argument(
        "--timeout", type=cli_types.duration, metavar="DURATION", help="an attempt's lease (30s, 5m)"
    )
    create.add_argument(
        "--backoff", type=cli_types.duration, metavar="DURATION", help="the first wait after a failure"
    )
    create.add_argument("--priority", type=int, help="-1000 to 1000, higher first (default 0)")
    create.add_argument("--concurrency-key", help="jobs sharing it share the name's per-key limits")
    deadline = create.add_mutually_exclusive_group()
    deadline.add_argument(
        "--expires-in",
        type=cli_types.duration,
        metavar="DURATION",
        help="not finished by now + this, it is cancelled",
    )
    deadline.add_argument(
        "--expires-at",
        type=cli_types.instant,
        metavar="TIME",
        help="not finished by this time, it is cancelled",
    )
    create.add_argument("--callback-url", help="where to POST when the job finishes")
    create.add_argument(
        "--callback-header", action="append", default=[], metavar="NAME=VALUE", help="a header for it"
    )
    _room_wait(create)
    get = _leaf(jobs, "get", jobs_get, in_space, "show a job")
    get.add_argument("id")
    listing = _leaf(jobs, "list", jobs_list, in_space, "list jobs, newest first")
    listing.add_argument(
        "--status",
        type=str.lower,
        choices=["pending", "running", "completed", "failed", "cancelled", "stalled"],
    )
    listing.add_argument("--name", help="only jobs of this name")
    listing.add_argument("--limit", type=int, help="jobs a page (default 20; 100 with --all)")
    listing.add_argument("--cursor", help="start at this page: the cursor the last page printed (on stderr)")
    listing.add_argument("--all", action="store_true", help="follow the cursors: every job, page after page")
    cancel = _leaf(jobs, "cancel", jobs_cancel, in_space, "cancel jobs")
    cancel.add_argument("ids", nargs="+", metavar="id")
    retry = _leaf(jobs, "retry", jobs_retry, in_space, "retry failed jobs: a new job for each, once")
    retry.add_argument("ids", nargs="+", metavar="id")
    follow = _leaf(
        jobs, "follow", jobs_follow, in_space, "show a job's progress and log lines until it finishes"
    )
    follow.epilog = exit_codes_text()
    follow.formatter_class = argparse.RawDescriptionHelpFormatter
    follow.add_argument("id")
    follow.add_argument(
        "--interval",
        type=cli_types.duration,
        default=cli_types.duration("500ms"),
        metavar="DURATION",
        help="how often to look (default 500ms)",
    )

    _names_parser(commands, in_space)
    _schedules_parser(commands, in_space)

    _spaces_and_tokens_parsers(commands, connection)
    return parser


def _spaces_and_tokens_parsers(commands: Any, connection: argparse.ArgumentParser) -> None:
    """`emit spaces list` and `emit tokens ...`: what a token may use, and the tokens."""
    spaces = commands.add_parser("spaces", help="the spaces a token may use").add_subparsers(
        title="commands", required=True
    )
    spaces_listing = _leaf(spaces, "list", spaces_list, connection, "list the spaces the token may use")
    spaces_listing.add_argument("--limit", type=int, help="at most this many (default: all)")

    tokens = commands.add_parser("tokens", help="mint, list and revoke API tokens").add_subparsers(
        title="commands", required=True
    )
    mint = _leaf(tokens, "create", tokens_create, connection, "mint a token (its secret is shown once)")
    mint.add_argument("--scope", action="append", required=True, choices=["create", "read", "work", "admin"])
    mint.add_argument("--space", action="append", help="a space it may use (default: every space)")
    mint.add_argument("--name", help="a label")
    _leaf(tokens, "list", tokens_list, connection, "list tokens, without secrets")
    revoke = _leaf(tokens, "revoke", tokens_revoke, connection, "revoke a token at once")
    revoke.add_argument("id")


def _names_parser(commands: Any, in_space: argparse.ArgumentParser) -> None:
    """`emit names ...`: a name's policy, pause, resume, reset, and the space's diagnostics."""
    names = commands.add_parser(
        "names", help="flow control per job name: policies, pause, diagnostics"
    ).add_subparsers(title="commands", required=True)
    for verb, command, text in (
        ("policy", names_policy, "show a name's policy in force"),
        ("pause", names_pause, "hand out nothing of a name until it is resumed"),
        ("resume", names_resume, "hand out a paused name's jobs again"),
        ("reset", names_reset, "put every field of a name's policy back to the space's default"),
    ):
        _leaf(names, verb, command, in_space, text).add_argument("name")
    setting = _leaf(names, "set", names_set, in_space, "set fields of a name's policy (none: no limit)")
    setting.add_argument("name")
    setting.add_argument("--concurrency", type=cli_types.limit, default=_UNSET, metavar="N|none")
    setting.add_argument(
        "--rate", type=cli_types.rate, default=_UNSET, metavar="TOKENS/DURATION|none", help="e.g. 100/1m"
    )
    setting.add_argument("--per-key-concurrency", type=cli_types.limit, default=_UNSET, metavar="N|none")
    setting.add_argument(
        "--per-key-rate", type=cli_types.rate, default=_UNSET, metavar="TOKENS/DURATION|none"
    )
    setting.add_argument(
        "--aging-interval",
        type=cli_types.duration_or_none,
        default=_UNSET,
        metavar="DURATION|none",
        help="how long a wait is worth one step of priority (30s); none: strict priority",
    )
    _leaf(names, "diagnostics", names_diagnostics, in_space, "each name's pending work and why it waits")


def _schedules_parser(commands: Any, in_space: argparse.ArgumentParser) -> None:
    """`emit schedules ...`: cron schedules that make a job at each fire time."""
    schedules = commands.add_parser(
        "schedules", help="cron schedules: a job at each fire time"
    ).add_subparsers(title="commands", required=True)
    listing = _leaf(schedules, "list", schedules_list, in_space, "list schedules by id, with their next run")
    listing.add_argument("--limit", type=int, help="at most this many (default: all)")
    get = _leaf(
        schedules, "get", schedules_get, in_space, "show a schedule, its next fire times and last run"
    )
    get.add_argument("id")
    put = _leaf(schedules, "put", schedules_put, in_space, "create a schedule, or replace it whole")
    update = _leaf(schedules, "update", schedules_update, in_space, "change only the fields given")
    for leaf, whole in ((put, True), (update, False)):
        leaf.add_argument("id")
        leaf.add_argument(
            "--cron", required=whole, help="five fields (min hour day month weekday), or @daily"
        )
        leaf.add_argument(
            "--timezone", default="UTC" if whole else None, help="IANA: the cron's times are its local times"
        )
        leaf.add_argument("--job", help='the job to make, as the API\'s JSON ({"name": ...}), or - for stdin')
        leaf.add_argument("--name", help="the job's name (instead of --job)")
        leaf.add_argument("--payload", help="the job's payload as JSON, with --name")
        leaf.add_argument(
            "--overlap",
            type=str.lower,
            choices=["allow", "skip"],
            default="allow" if whole else None,
            help="skip: no new job while the last one is unfinished",
        )
    put.add_argument("--paused", action="store_true", help="make it paused (no jobs until resumed)")
    for verb, command, text in (
        ("pause", schedules_pause, "make no jobs until resumed (missed times are not made up)"),
        ("resume", schedules_resume, "make jobs again, from the first fire time after now"),
    ):
        _leaf(schedules, verb, command, in_space, text).add_argument("id")
    trigger = _leaf(schedules, "trigger", schedules_trigger, in_space, "make one job of a schedule now")
    trigger.add_argument("id")
    trigger.add_argument("--key", help="the job's idempotency key: a repeat answers the same job")
    _room_wait(trigger)
    delete = _leaf(schedules, "delete", schedules_delete, in_space, "delete a schedule (its jobs stay)")
    delete.add_argument("id")


def _leaf(
    commands: Any, name: str, command: Command, parent: argparse.ArgumentParser, help: str
) -> argparse.ArgumentParser:
    leaf: argparse.ArgumentParser = commands.add_parser(name, parents=[parent], help=help, description=help)
    leaf.set_defaults(command=command)
    return leaf


def _room_wait(leaf: argparse.ArgumentParser) -> None:
    leaf.add_argument(
        "--room-wait",
        type=cli_types.duration,
        default=cli_types.duration("60s"),
        metavar="DURATION",
        help="wait this long for room when the space is full (429; default 60s)",
    )


def exit_codes_text() -> str:
    """`--help`'s footer: every exit status, from `EXIT_CODES`."""
    lines = [
        textwrap.fill(text, 92, initial_indent=f"  {code:>3}  ", subsequent_indent=" " * 7)
        for code, text in EXIT_CODES.items()
    ]
    return "exit status:\n" + "\n".join(lines) + "\n\n" + _INPUTS


_INPUTS = (
    "durations take a unit: 500ms, 10s, 5m, 2h, 1d (1h30m); times are ISO 8601 with a timezone\n"
    "(2026-12-02T17:00:00+01:00, or Z) or +DURATION from now. Times are shown in local time."
)


if __name__ == "__main__":
    sys.exit(main())
