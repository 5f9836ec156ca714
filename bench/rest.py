"""`make bench`: what a stack with no traffic costs a month on AWS.

Two parts, each printed on a line of its own with what it counts:

- the template's: the stack is synthesized here as `make synth` does (or `--template` names
  one), and every resource AWS bills while nothing happens is counted by type and priced:
  alarms by the metrics they read, composite alarms, dashboards, KMS keys, secrets, each
  schedule's invocations and the Lambda requests, compute, traces and log lines they make,
  and the empty receives of Lambda's pollers on each SQS queue it reads;
- the clock's work: each scheduled function is run in process, as Lambda runs it (its own
  module's `lambda_handler`, its schedule's input), tick after tick on an in-memory DynamoDB
  (`bench.world`) holding a stack at rest: one space whose three names each had a job, one
  with a callback, all finished and the callback delivered. Its DynamoDB units are costed by
  `bench.capacity`, the custom metrics it publishes and the bytes it logs are read from
  what it prints.

Prices are us-east-1, on demand, without free tiers (an account's free tier is shared by
everything in it). A resource type this module does not know fails the tests
(`AtRest.unpriced`): say what it costs at rest here before it joins the stack.

The last line is `at rest: $<y> a month`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import httpx
from moto import mock_aws

from bench.capacity import CapacityMeter
from bench.world import moto_runtime
from devserver.background import Sender, StreamReader, handler
from devserver.gateway import LambdaContext
from devserver.wiring import REGION
from shared import render, runtime
from shared.clock import ManualClock
from shared.jobs.claim import claim
from shared.jobs.create import create
from shared.jobs.report import report
from shared.observability import logger
from shared.schema import NewJob, reports_in

Json = dict[str, Any]

TARGET_DOLLARS = 1.00
"""Issue 19: at rest, at most $1 a month."""
CLOCKS_SHARE = 0.10
"""What the template's part leaves for the clock's work: at the issue's idle tick of at most
10 DynamoDB calls (eventually consistent queries finding nothing, half a read unit each),
$0.03 a month, and a line of metrics (under a cent)."""

HOURS_A_MONTH = 730
MINUTES_A_MONTH = HOURS_A_MONTH * 60
"""43,800: AWS prices a month as 730 hours."""

# -- prices (us-east-1, USD, a month unless said) --------------------------------------------
# CloudWatch: https://aws.amazon.com/cloudwatch/pricing/ . An alarm is billed for each metric
# it reads ("alarm metrics": the free tier's 10 are "only applicable to Standard resolution
# alarms that list metrics directly"), so a metric math alarm costs $0.10 for every metric in
# its expression; Metrics Insights alarms are billed per metric analyzed (not priced here).
# Custom metrics are prorated by the hour, charged only in hours when data is sent.
ALARM_METRIC = 0.10
HIGH_RESOLUTION_ALARM_METRIC = 0.30
COMPOSITE_ALARM = 0.50
DASHBOARD = 3.00
"""Beyond an account's first three."""
CUSTOM_METRIC = 0.30
"""The first 10,000 metrics, each sent in every hour of the month."""
LOGS_INGESTED_PER_GB = 0.50
LOGS_STORED_PER_GB = 0.03
KMS_KEY = 1.00
"""A customer-managed key: https://aws.amazon.com/kms/pricing/"""
SECRET = 0.40
"""https://aws.amazon.com/secrets-manager/pricing/"""
SCHEDULER_PER_MILLION = 1.00
"""EventBridge Scheduler invocations past the free 14 million a month [5.4]."""
LAMBDA_REQUESTS_PER_MILLION = 0.20
LAMBDA_GB_SECOND = {"arm64": 0.0000133334, "x86_64": 0.0000166667}
"""[2.6]"""
XRAY_TRACES_PER_MILLION = 5.00
"""Traces recorded: https://aws.amazon.com/xray/pricing/"""
SQS_REQUESTS_PER_MILLION = 0.40
"""Standard queues: https://aws.amazon.com/sqs/pricing/"""
DYNAMODB_READS_PER_MILLION = 0.125
DYNAMODB_WRITES_PER_MILLION = 0.625
"""On-demand units [3.9]."""
PER_GB_KEPT = {
    "DynamoDB": 0.25,
    "DynamoDB point-in-time recovery": 0.20,
    "S3 Standard": 0.023,
    "CloudWatch Logs": LOGS_STORED_PER_GB,
}
"""Storage: what a stack keeps, not what it does at rest (pricing pages of each)."""

# -- what is assumed, not measured -------------------------------------------------------------
IDLE_TICK_MS = 300
"""An idle tick's billed duration on AWS (the README's estimate, not measured: the bench runs
the tick in process, where a call takes moto's time, not DynamoDB's)."""
PLATFORM_LOG_BYTES = 400
"""Lambda's own lines a text-format invocation adds to its log group (START, END and REPORT,
about 300 bytes) and the 26 bytes of each event's metadata CloudWatch Logs counts."""
SQS_POLLERS = 5
SQS_EMPTY_RECEIVES_A_MINUTE = 3
"""An event source mapping on an idle queue long-polls it (20 s a receive) from 5 pollers:
about 657,000 empty receives a month (an estimate from AWS's description of its pollers)."""

FREE_AT_REST = frozenset(
    {
        "AWS::ApiGatewayV2::Api",
        "AWS::ApiGatewayV2::Integration",
        "AWS::ApiGatewayV2::Route",
        "AWS::ApiGatewayV2::RouteResponse",
        "AWS::ApiGatewayV2::Stage",
        "AWS::CDK::Metadata",
        "AWS::IAM::Policy",
        "AWS::IAM::Role",
        "AWS::Lambda::EventInvokeConfig",
        "AWS::Lambda::Function",  # requests and compute (its schedule's, below); no provisioned concurrency
        "AWS::Lambda::LayerVersion",
        "AWS::Lambda::Permission",
        "AWS::Logs::LogGroup",  # per GB kept; what the clock logs is priced with it
        "AWS::Logs::MetricFilter",  # its metric is billed only in hours it matches something
        "AWS::S3::Bucket",  # per GB kept
        "AWS::S3::BucketPolicy",
        "AWS::SNS::Subscription",
        "AWS::SNS::Topic",
        "AWS::SNS::TopicPolicy",
        "AWS::SQS::Queue",  # per request; the receives of Lambda's pollers are priced below
        "AWS::SQS::QueuePolicy",
    }
)
"""Resource types that cost nothing while nothing happens (only requests, or storage)."""
PRICED = frozenset(
    {
        "AWS::CloudWatch::Alarm",
        "AWS::CloudWatch::CompositeAlarm",
        "AWS::CloudWatch::Dashboard",
        "AWS::DynamoDB::Table",
        "AWS::KMS::Key",
        "AWS::Lambda::EventSourceMapping",
        "AWS::Scheduler::Schedule",
        "AWS::SecretsManager::Secret",
    }
)


@dataclass(frozen=True)
class Cost:
    what: str
    dollars: float
    measured: bool = False
    """From the scheduled functions' ticks run here, not from the template."""


@dataclass(frozen=True)
class Scheduled:
    """A function a schedule invokes: what the template says of it and of its schedule."""

    module: str
    invocations: float
    """A month."""
    event: Json
    memory_mb: int
    timeout_s: int
    architecture: str
    traced: bool


@dataclass(frozen=True)
class IdleTicks:
    """A scheduled function's ticks with nothing due, as run here: per tick, on average."""

    ticks: int
    calls: float
    read_units: float
    write_units: float
    log_bytes: float
    metrics: tuple[str, ...]
    """The custom metrics it published (`namespace/name {dimensions}`), each at least once in
    `ticks` ticks, so in every hour of the month."""


@dataclass
class AtRest:
    costs: list[Cost] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)
    """Resource types (and why) this module cannot price."""

    @property
    def total(self) -> float:
        return sum(c.dollars for c in self.costs)

    @property
    def template_part(self) -> float:
        return sum(c.dollars for c in self.costs if not c.measured)

    @property
    def clocks_part(self) -> float:
        return sum(c.dollars for c in self.costs if c.measured)


# -- the template -----------------------------------------------------------------------------


def resources(template: Json, kind: str) -> dict[str, Json]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def _referenced(value: Any) -> str | None:
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    if isinstance(value, dict) and "Ref" in value:
        return str(value["Ref"])
    return None


_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_MINUTES = {"minute": 1, "hour": 60, "day": 1_440}


def invocations_a_month(expression: str) -> float:
    """A `rate(...)` schedule's invocations in 730 hours (`cron` and `at` are not priced here)."""
    found = _RATE.match(expression)
    if found is None:
        raise ValueError(f"not a rate expression: {expression}")
    value, unit = int(found[1]), found[2].removesuffix("s")
    return MINUTES_A_MONTH / (value * _MINUTES[unit])


def scheduled(template: Json) -> list[Scheduled]:
    """Each schedule that invokes one of the template's functions."""
    functions = resources(template, "AWS::Lambda::Function")
    out = []
    for schedule in resources(template, "AWS::Scheduler::Schedule").values():
        props = schedule["Properties"]
        function_id = _referenced(props["Target"]["Arn"])
        if function_id not in functions:
            raise ValueError(f"a schedule's target is not one of the stack's functions: {props['Target']}")
        function = functions[function_id]["Properties"]
        out.append(
            Scheduled(
                module=function["Handler"].split(".")[0],
                invocations=invocations_a_month(props["ScheduleExpression"]),
                event=json.loads(props["Target"].get("Input", "{}")),
                memory_mb=int(function.get("MemorySize", 128)),
                timeout_s=int(function.get("Timeout", 3)),
                architecture=function.get("Architectures", ["x86_64"])[0],
                traced=function.get("TracingConfig", {}).get("Mode") == "Active",
            )
        )
    return out


def _alarm_metrics(props: Json) -> tuple[int, bool]:
    """(metrics the alarm reads, whether at high resolution): what it is billed for."""
    if "MetricName" in props:
        return 1, int(props.get("Period", 60)) < 60
    queries = props["Metrics"]
    expressions = " ".join(q.get("Expression", "") for q in queries).upper()
    if "SELECT" in expressions or "ANOMALY_DETECTION_BAND" in expressions:
        raise ValueError("a Metrics Insights or anomaly detection alarm: priced by what it analyzes")
    stats = [q["MetricStat"] for q in queries if "MetricStat" in q]
    return len(stats), any(int(s["Period"]) < 60 for s in stats)


def _alarms(template: Json, out: AtRest) -> None:
    alarms = resources(template, "AWS::CloudWatch::Alarm")
    standard = high = 0
    for name, alarm in alarms.items():
        try:
            metrics, high_resolution = _alarm_metrics(alarm["Properties"])
        except ValueError as error:
            out.unpriced.append(f"{name}: {error}")
            continue
        if high_resolution:
            high += metrics
        else:
            standard += metrics
    dollars = standard * ALARM_METRIC + high * HIGH_RESOLUTION_ALARM_METRIC
    detail = f", {high} at high resolution" if high else ""
    out.costs.append(
        Cost(
            f"{len(alarms)} alarms reading {standard + high} metrics{detail}, ${ALARM_METRIC:.2f} a metric",
            dollars,
        )
    )
    composites = len(resources(template, "AWS::CloudWatch::CompositeAlarm"))
    out.costs.append(
        Cost(f"{composites} composite alarms, ${COMPOSITE_ALARM:.2f} each", composites * COMPOSITE_ALARM)
    )
    dashboards = len(resources(template, "AWS::CloudWatch::Dashboard"))
    out.costs.append(
        Cost(
            f"{dashboards} dashboards (-c dashboard=true adds one), ${DASHBOARD:.2f} each",
            dashboards * DASHBOARD,
        )
    )


def _keys_and_secrets(template: Json, out: AtRest) -> None:
    keys = len(resources(template, "AWS::KMS::Key"))
    secrets = len(resources(template, "AWS::SecretsManager::Secret"))
    out.costs.append(
        Cost(
            f"{keys} customer-managed KMS keys (${KMS_KEY:.2f} each), {secrets} secrets (${SECRET:.2f} each)",
            keys * KMS_KEY + secrets * SECRET,
        )
    )


def _schedules(template: Json, out: AtRest) -> None:
    for s in scheduled(template):
        n = s.invocations
        out.costs.append(
            Cost(
                f"{s.module}: {n:,.0f} schedule invocations, ${SCHEDULER_PER_MILLION:.2f} a million", n / 1e6
            )
        )
        gb_s = n * IDLE_TICK_MS / 1000 * s.memory_mb / 1024
        out.costs.append(
            Cost(
                f"{s.module}: Lambda, {n:,.0f} requests and {gb_s:,.0f} GB-s ({IDLE_TICK_MS} ms at "
                f"{s.memory_mb} MB on {s.architecture}, assumed)",
                n / 1e6 * LAMBDA_REQUESTS_PER_MILLION + gb_s * LAMBDA_GB_SECOND[s.architecture],
            )
        )
        traces = n if s.traced else 0  # each tick is the first request of its second: sampled
        out.costs.append(
            Cost(
                f"{s.module}: X-Ray, {traces:,.0f} traces ({'traced' if s.traced else 'not traced'})",
                traces / 1e6 * XRAY_TRACES_PER_MILLION,
            )
        )
        logged = n * PLATFORM_LOG_BYTES / 2**30
        out.costs.append(
            Cost(
                f"{s.module}: Lambda's own log lines, {PLATFORM_LOG_BYTES} bytes a tick, "
                f"${LOGS_INGESTED_PER_GB:.2f} a GB ingested and ${LOGS_STORED_PER_GB:.2f} kept",
                logged * (LOGS_INGESTED_PER_GB + LOGS_STORED_PER_GB),
            )
        )


def _event_sources(template: Json, out: AtRest) -> None:
    queues = 0
    for name, mapping in resources(template, "AWS::Lambda::EventSourceMapping").items():
        source = _referenced(mapping["Properties"].get("EventSourceArn"))
        kind = template["Resources"].get(source or "", {}).get("Type")
        if kind == "AWS::SQS::Queue":
            queues += 1
        elif kind != "AWS::DynamoDB::Table":  # a table's stream: Lambda's GetRecords are free
            out.unpriced.append(f"{name}: an event source mapping on {kind or 'something outside the stack'}")
    receives = queues * SQS_POLLERS * SQS_EMPTY_RECEIVES_A_MINUTE * MINUTES_A_MONTH
    out.costs.append(
        Cost(
            f"{queues} SQS queues read by Lambda: {receives:,.0f} empty receives of its pollers (estimate)",
            receives / 1e6 * SQS_REQUESTS_PER_MILLION,
        )
    )


def _unknown(template: Json, out: AtRest) -> None:
    for name, resource in template["Resources"].items():
        kind = resource["Type"]
        if kind not in FREE_AT_REST | PRICED:
            out.unpriced.append(f"{name}: {kind}, unknown to bench/rest.py")
    for name, table in resources(template, "AWS::DynamoDB::Table").items():
        if table["Properties"].get("BillingMode") != "PAY_PER_REQUEST":
            out.unpriced.append(f"{name}: a table with provisioned capacity")


def price(template: Json, idle: Mapping[str, IdleTicks] | None = None) -> AtRest:
    """What the template costs at rest, with each scheduled function's idle ticks (by module;
    without them, the template's part alone)."""
    out = AtRest()
    _alarms(template, out)
    _keys_and_secrets(template, out)
    _schedules(template, out)
    _event_sources(template, out)
    _unknown(template, out)
    if idle is not None:
        for s in scheduled(template):
            _clocks_work(s, idle[s.module], out)
    return out


def _clocks_work(s: Scheduled, tick: IdleTicks, out: AtRest) -> None:
    n = s.invocations
    read_units, write_units = tick.read_units * n, tick.write_units * n
    out.costs.append(
        Cost(
            f"{s.module}: DynamoDB, {tick.calls:g} calls, {tick.read_units:g} read and {tick.write_units:g} "
            f"write units an idle tick (measured, {tick.ticks} ticks)",
            read_units / 1e6 * DYNAMODB_READS_PER_MILLION + write_units / 1e6 * DYNAMODB_WRITES_PER_MILLION,
            measured=True,
        )
    )
    names = ", ".join(m.split(" ")[0] for m in tick.metrics) or "none"
    out.costs.append(
        Cost(
            f"{s.module}: {len(tick.metrics)} custom metrics published at rest ({names}), "
            f"${CUSTOM_METRIC:.2f} each",
            len(tick.metrics) * CUSTOM_METRIC,
            measured=True,
        )
    )
    logged = n * tick.log_bytes / 2**30
    out.costs.append(
        Cost(
            f"{s.module}: its own log lines, {tick.log_bytes:g} bytes a tick (measured)",
            logged * (LOGS_INGESTED_PER_GB + LOGS_STORED_PER_GB),
            measured=True,
        )
    )


def per_gb(template: Json) -> str:
    """What storage adds, per GB kept (not at rest's: a stack with no traffic keeps what it has)."""
    pitr = any(
        t["Properties"].get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled")
        for t in resources(template, "AWS::DynamoDB::Table").values()
    )
    table = PER_GB_KEPT["DynamoDB"] + (PER_GB_KEPT["DynamoDB point-in-time recovery"] if pitr else 0)
    return (
        f"DynamoDB ${table:.2f}{' (point-in-time recovery included)' if pitr else ''}, "
        f"S3 ${PER_GB_KEPT['S3 Standard']:.3f}, logs ${PER_GB_KEPT['CloudWatch Logs']:.2f}"
    )


# -- the clock's ticks, run here --------------------------------------------------------------


def at_rest(rt: Any, stream: StreamReader, space: str = "rest") -> None:
    """One space, three names each with a finished job, one with a callback that was
    delivered (`bench.idle` makes its real spaces so too)."""
    for name in NAMES:
        fields: Json = {"name": name, "payload": {"n": 1}}
        if name == "charge-invoice":
            fields["callback"] = {"url": "https://hooks.example.com/emit"}
        create(rt.context, space, [NewJob.model_validate(fields)], batch=False)
        (job,) = claim(
            rt.context, space, count=1, names=[name], wait_ms=0, lease_ms=None, show=render.claimed
        )
        done = {"id": job["id"], "attempt": job["attempt"], "complete": {"result": {}}}
        report(rt.context, space, reports_in([done]))
    while records := stream.read():
        rt.stream.deliver([due for record in records if (due := rt.stream.record(record)) is not None])
    with warnings.catch_warnings():  # the sender's metrics are off here, and Powertools says so
        warnings.filterwarnings("ignore", "No application metrics to publish")
        Sender(rt.outbox).drain()


NAMES = ("charge-invoice", "send-email", "resize-image")
"""The names of a space at rest."""


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _printed() -> Iterator[io.StringIO]:
    """What a handler prints: metrics (EMF, on stdout) and Powertools' log lines."""
    out = io.StringIO()
    stream_handler = logger.registered_handler
    before = stream_handler.setStream(out) if isinstance(stream_handler, logging.StreamHandler) else None
    try:
        with contextlib.redirect_stdout(out):
            yield out
    finally:
        if isinstance(stream_handler, logging.StreamHandler) and before is not None:
            stream_handler.setStream(before)


def published_metrics(printed: str) -> set[str]:
    """The custom metrics in a handler's EMF lines, as `namespace/name {dimension=value,...}`."""
    found = set()
    for line in printed.splitlines():
        try:
            blob = json.loads(line)
        except ValueError:
            continue
        if not isinstance(blob, dict) or "_aws" not in blob:
            continue
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            for dimensions in directive["Dimensions"] or [[]]:
                where = ",".join(f"{d}={blob.get(d)}" for d in dimensions)
                for metric in directive["Metrics"]:
                    found.add(f"{directive['Namespace']}/{metric['Name']} {{{where}}}")
    return found


def measure_idle(s: Scheduled, *, ticks: int | None = None) -> IdleTicks:
    """Run `s`'s handler tick after tick (ten by default: every tick at rest is alike, the
    clock's work being filed by when it is due) on a stack at rest, and average."""
    with mock_aws():
        clock = ManualClock()
        rt, client = moto_runtime(
            clock,
            serialized=True,
            allow_private_callbacks=True,  # no name lookup for the receiver
            callback_transport=httpx.MockTransport(lambda request: httpx.Response(204)),
        )
        stream = StreamReader(rt, client=boto3.client("dynamodbstreams", region_name=REGION))
        runtime.install(rt)
        try:
            at_rest(rt, stream)
            tick_ms = int(s.event.get("tickMs", rt.config.clock_tick_ms))
            ticks = ticks or 10
            run = handler(s.module)
            meter = CapacityMeter(client)
            calls = read = write = logged = 0.0
            metrics: set[str] = set()
            with _environment(POWERTOOLS_METRICS_DISABLED="false", POWERTOOLS_TRACE_DISABLED="true"):
                clock.advance(tick_ms)
                with _printed():  # a first tick, not counted: Lambda keeps the function warm
                    run(s.event, LambdaContext(s.module, s.timeout_s, s.memory_mb))
                meter.attach()
                for _ in range(ticks):
                    clock.advance(tick_ms)
                    meter.reset()
                    with _printed() as printed:
                        run(s.event, LambdaContext(s.module, s.timeout_s, s.memory_mb))
                    usage = meter.usage
                    calls, read, write = (
                        calls + usage.calls,
                        read + usage.read_units,
                        write + usage.write_units,
                    )
                    logged += len(printed.getvalue().encode())
                    metrics |= published_metrics(printed.getvalue())
                meter.detach()
        finally:
            runtime.install(None)
    return IdleTicks(
        ticks, calls / ticks, read / ticks, write / ticks, logged / ticks, tuple(sorted(metrics))
    )


# -- the command ------------------------------------------------------------------------------


def synthesize(context: Mapping[str, str]) -> Json:
    """The stack's template, synthesized as `make synth` does (cdk-nag included) with `context`."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
    from aws_cdk import App  # noqa: PLC0415 - jsii starts a Node process: only when synthesizing

    from infra.app import build  # noqa: PLC0415 - likewise

    with tempfile.TemporaryDirectory() as outdir:
        app = App(outdir=outdir, analytics_reporting=False, context=dict(context))
        stack = build(app)
        app.synth()
        template: Json = json.loads((Path(outdir) / f"{stack.stack_name}.template.json").read_text())
    return template


def describe(at_rest: AtRest, template: Json) -> list[str]:
    lines = ["At rest: what a stack with no traffic costs a month (us-east-1, no free tier):"]
    lines += [f"  {c.what:<100} {f'${c.dollars:.2f}':>6}" for c in at_rest.costs]
    lines.append(
        f"  of which the template's ${at_rest.template_part:.2f} and the clock's work "
        f"${at_rest.clocks_part:.2f}; storage adds, a GB a month: {per_gb(template)}"
    )
    lines += [f"  not priced (say what it costs at rest in bench/rest.py): {u}" for u in at_rest.unpriced]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--template", type=Path, help="price this template instead of synthesizing one")
    parser.add_argument(
        "-c",
        "--context",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="as `cdk -c` (dashboard=true)",
    )
    parser.add_argument("--ticks", type=int, help="idle ticks to run (default: ten)")
    args = parser.parse_args(argv)
    context = dict(item.split("=", 1) for item in args.context)
    template = json.loads(args.template.read_text()) if args.template else synthesize(context)
    idle = {s.module: measure_idle(s, ticks=args.ticks) for s in scheduled(template)}
    at_rest = price(template, idle)
    print("\n".join(describe(at_rest, template)))
    print(f"at rest: ${at_rest.total:.2f} a month")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
