"""The `emit` command: `emit jobs ...`, `emit names ...`, `emit schedules ...`, `emit spaces
list` and `emit tokens ...` on the SDK, and `emit dev`.

`emit dev` runs the service locally; the SDK alone carries no server, so it needs the
service installed beside it (`pip install "emit-service[local]"` from the same checkout, or
`make dev` in the repository).

Every command takes `--url`, `--token` (and for jobs, names and schedules `--space`), defaulting to
`EMIT_URL`, `EMIT_TOKEN` and `EMIT_SPACE`, and `--json` to print the API's JSON for
scripts. Exit status: 0 done, 1 emit refused or could not be reached, 2 a usage error;
`emit jobs follow` exits 3 when the job failed and 4 when it was cancelled.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from emit.client import Emit
from emit.display import (
    FollowView,
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
from emit.names import Policy, Rate
from emit.schedules import JobTemplate, Schedule

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_CANCELLED = 4
EXIT_STALLED = 5
"""An at-most-once job whose lease ended without a report: it may or may not have run."""

Command = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["dev"]:
        return _dev(argv[1:])
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
        return 130


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
        return 2
    return dev_main(argv)


# -- the commands ---------------------------------------------------------------------


def _client(args: argparse.Namespace, *, in_space: bool = True, room_wait: float = 60.0) -> Emit:
    return Emit(args.url, args.token, args.space if in_space else None, room_wait=room_wait)


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
            delay=_ms(args.delay_ms),
            run_at=_at_ms(args.run_at_ms),
            max_attempts=args.max_attempts,
            timeout=_ms(args.timeout_ms),
            backoff=_ms(args.backoff_ms),
            callback=callback,
            priority=args.priority,
            concurrency_key=args.concurrency_key,
            expires_at=_at_ms(args.expires_at_ms),
            expires_in=_ms(args.expires_in_ms),
        )
    _print(args, created.raw, lambda: print(f"{created.id} {created.outcome}"))
    return 0


def _ms(value: int | None) -> timedelta | None:
    """A flag in ms (the API's unit, which the flags keep) as the SDK takes a duration."""
    return None if value is None else timedelta(milliseconds=value)


def _at_ms(value: int | None) -> datetime | None:
    """A flag in Unix ms as the SDK takes an instant."""
    return None if value is None else datetime.fromtimestamp(value / 1000, UTC)


def jobs_get(args: argparse.Namespace) -> int:
    with _client(args) as client:
        job = client.jobs.get(args.id)
    _print(args, job.raw, lambda: job_details(job, sys.stdout))
    return 0


def jobs_list(args: argparse.Namespace) -> int:
    with _client(args) as client:
        jobs = list(client.jobs.list(status=args.status, name=args.name, limit=args.limit))
    _print(args, [j.raw for j in jobs], lambda: table(job_rows(jobs), sys.stdout))
    return 0


def jobs_cancel(args: argparse.Namespace) -> int:
    with _client(args) as client:
        outcomes = client.jobs.cancel(*args.ids)
    rows = [
        (
            job_id,
            o.status or (o.rejection.reason if o.rejection else ""),
            o.rejection.message if o.rejection else "",
        )
        for job_id, o in zip(args.ids, outcomes, strict=True)
    ]
    _print(args, [o.raw for o in outcomes], lambda: table(rows, sys.stdout))
    return 0 if all(o.rejection is None for o in outcomes) else EXIT_ERROR


def jobs_retry(args: argparse.Namespace) -> int:
    """One row per id: the new job and `new` (or `duplicate`: retried before), or why none."""
    with _client(args) as client:
        outcomes = client.jobs.retry(*args.ids)
    rows = [
        (
            job_id,
            o.id or "-",
            o.outcome or (o.rejection.reason if o.rejection else ""),
            o.rejection.message if o.rejection else "",
        )
        for job_id, o in zip(args.ids, outcomes, strict=True)
    ]
    _print(args, [o.raw for o in outcomes], lambda: table(rows, sys.stdout))
    return 0 if all(o.rejection is None for o in outcomes) else EXIT_ERROR


def jobs_follow(args: argparse.Namespace) -> int:
    """Follow until the job finishes; the exit status says how it finished."""
    view = FollowView(sys.stdout, live=sys.stdout.isatty() and not args.json)
    last: Job | None = None
    with _client(args) as client:
        try:
            for update in client.jobs.follow(args.id, interval=args.interval):
                if isinstance(update, Line):
                    _stream(args, "line", update.raw, functools.partial(view.line, update))
                else:
                    last = update
                    _stream(args, "job", update.raw, functools.partial(view.job, update))
        finally:
            view.close()
    if last is None or last.status == "completed":
        return 0
    return {"failed": EXIT_FAILED, "stalled": EXIT_STALLED}.get(last.status, EXIT_CANCELLED)


def _show_policy(args: argparse.Namespace, policy: Policy) -> int:
    _print(args, policy.raw, lambda: policy_details(policy, sys.stdout))
    return 0


def names_policy(args: argparse.Namespace) -> int:
    with _client(args) as client:
        return _show_policy(args, client.names.policy(args.name))


_POLICY_OPTIONS = ("concurrency", "rate", "per_key_concurrency", "per_key_rate", "aging_interval_ms")


def names_set(args: argparse.Namespace) -> int:
    fields = {f: getattr(args, f) for f in _POLICY_OPTIONS if getattr(args, f) is not _UNSET}
    if "aging_interval_ms" in fields:  # the flag is in ms; the SDK takes a duration
        fields["aging_interval"] = _ms(fields.pop("aging_interval_ms"))
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
    _print(args, [n.raw for n in names], lambda: table(diagnostics_rows(names), sys.stdout))
    return 0


_UNSET = object()


def _limit_argument(text: str) -> int | None:
    """A number, or `none` for no limit."""
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or none") from None


def _rate_argument(text: str) -> Rate | None:
    """TOKENS/INTERVAL_MS (`10/1000`), or `none` for no limit."""
    if text.lower() == "none":
        return None
    tokens, _, interval = text.partition("/")
    try:
        return Rate(int(tokens), timedelta(milliseconds=int(interval)))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not TOKENS/INTERVAL_MS or none") from None


def _show_schedule(args: argparse.Namespace, schedule: Schedule) -> int:
    _print(args, schedule.raw, lambda: schedule_details(schedule, sys.stdout))
    return 0


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
    _print(args, [s.raw for s in found], lambda: table(schedule_rows(found), sys.stdout))
    return 0


def schedules_trigger(args: argparse.Namespace) -> int:
    with _client(args, room_wait=args.room_wait) as client:
        created = client.schedules.trigger(args.id, key=args.key)
    _print(args, created.raw, lambda: print(f"{created.id} {created.outcome}"))
    return 0


def schedules_delete(args: argparse.Namespace) -> int:
    with _client(args) as client:
        client.schedules.delete(args.id)
    _print(args, {"id": args.id, "deleted": True}, lambda: print(f"deleted {args.id}"))
    return 0


def spaces_list(args: argparse.Namespace) -> int:
    with _client(args, in_space=False) as client:
        spaces = list(client.spaces.list(limit=args.limit))
    rows = [("SPACE", "IN FLIGHT")] + [(s.name, str(s.in_flight)) for s in spaces]
    _print(args, [{"name": s.name, "inFlight": s.in_flight} for s in spaces], lambda: table(rows, sys.stdout))
    return 0


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
    return 0


def tokens_list(args: argparse.Namespace) -> int:
    with _client(args, in_space=False) as client:
        tokens = client.tokens.list()
    _print(args, [t.raw for t in tokens], lambda: table(token_rows(tokens), sys.stdout))
    return 0


def tokens_revoke(args: argparse.Namespace) -> int:
    with _client(args, in_space=False) as client:
        client.tokens.revoke(args.id)
    _print(args, {"id": args.id, "revoked": True}, lambda: print(f"revoked {args.id}"))
    return 0


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
    in_space = argparse.ArgumentParser(add_help=False, parents=[connection])
    in_space.add_argument("--space", help="the space (default: $EMIT_SPACE)")

    parser = argparse.ArgumentParser(prog="emit", description="The emit job queue.", epilog=_EXIT_CODES)
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
    create.add_argument("--delay-ms", type=int, help="not claimable before now + this")
    create.add_argument("--run-at-ms", type=int, help="not claimable before this Unix time in ms")
    create.add_argument("--max-attempts", type=int, help="failed attempts before the job fails")
    create.add_argument("--timeout-ms", type=int, help="an attempt's lease")
    create.add_argument("--backoff-ms", type=int, help="the first wait after a failure")
    create.add_argument("--priority", type=int, help="-1000 to 1000, higher first (default 0)")
    create.add_argument("--concurrency-key", help="jobs sharing it share the name's per-key limits")
    create.add_argument("--expires-in-ms", type=int, help="not finished by now + this, it is cancelled")
    create.add_argument(
        "--expires-at-ms", type=int, help="not finished by this Unix time in ms, it is cancelled"
    )
    create.add_argument("--callback-url", help="where to POST when the job finishes")
    create.add_argument(
        "--callback-header", action="append", default=[], metavar="NAME=VALUE", help="a header for it"
    )
    create.add_argument(
        "--room-wait", type=float, default=60.0, metavar="SECONDS", help="wait this long for room (429)"
    )
    get = _leaf(jobs, "get", jobs_get, in_space, "show a job")
    get.add_argument("id")
    listing = _leaf(jobs, "list", jobs_list, in_space, "list jobs, newest first")
    listing.add_argument(
        "--status",
        type=str.lower,
        choices=["pending", "running", "completed", "failed", "cancelled", "stalled"],
    )
    listing.add_argument("--name", help="only jobs of this name")
    listing.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    cancel = _leaf(jobs, "cancel", jobs_cancel, in_space, "cancel jobs")
    cancel.add_argument("ids", nargs="+", metavar="id")
    retry = _leaf(jobs, "retry", jobs_retry, in_space, "retry failed jobs: a new job for each, once")
    retry.add_argument("ids", nargs="+", metavar="id")
    follow = _leaf(
        jobs, "follow", jobs_follow, in_space, "show a job's progress and log lines until it finishes"
    )
    follow.add_argument("id")
    follow.add_argument("--interval", type=float, default=0.5, metavar="SECONDS", help="how often to look")

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
    setting.add_argument("--concurrency", type=_limit_argument, default=_UNSET, metavar="N|none")
    setting.add_argument("--rate", type=_rate_argument, default=_UNSET, metavar="TOKENS/MS|none")
    setting.add_argument("--per-key-concurrency", type=_limit_argument, default=_UNSET, metavar="N|none")
    setting.add_argument("--per-key-rate", type=_rate_argument, default=_UNSET, metavar="TOKENS/MS|none")
    setting.add_argument(
        "--aging-interval-ms",
        type=_limit_argument,
        default=_UNSET,
        metavar="MS|none",
        help="how long a wait is worth one step of priority; none: strict priority",
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
    trigger.add_argument(
        "--room-wait", type=float, default=60.0, metavar="SECONDS", help="wait this long for room (429)"
    )
    delete = _leaf(schedules, "delete", schedules_delete, in_space, "delete a schedule (its jobs stay)")
    delete.add_argument("id")


def _leaf(
    commands: Any, name: str, command: Command, parent: argparse.ArgumentParser, help: str
) -> argparse.ArgumentParser:
    leaf: argparse.ArgumentParser = commands.add_parser(name, parents=[parent], help=help, description=help)
    leaf.set_defaults(command=command)
    return leaf


_EXIT_CODES = (
    "exit status: 0 done; 1 emit refused the call or could not be reached; 2 a usage error; "
    "`jobs follow`: 3 the job failed, 4 it was cancelled"
)


if __name__ == "__main__":
    sys.exit(main())
