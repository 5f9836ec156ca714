"""The synthesized template: routes and functions, the table, the bucket, alarms, outputs."""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Match, Template

from infra import constants
from infra.app import number
from infra.constructs.functions import Functions
from infra.constructs.monitoring import FAULTS_METRIC, FUNCTION_FAULTS, INVOKE_FAILURES
from shared.config import Config
from shared.jobs.context import QueueConfig
from shared.outbox import LocalOutbox, SqsOutbox
from shared.routes import ROUTES, Route
from shared.runtime import Runtime
from shared.store.table import READY_INDEX, TTL_ATTRIBUTE, create_table_request
from shared.wake import LambdaLater, LambdaSender
from tests.infra.cfn import Json, Synthesized, http_only, module_of, referenced, resources, route_targets
from tests.infra.conftest import STACK, THROWAWAY

HTTP_API_PATH_PART = re.compile(r"^(\{[\w.:-]+\+?\}|[a-zA-Z0-9.:_-]+)$")
"""What API Gateway accepts in an HTTP API route's path part (aws-constraints 1.5)."""


@pytest.fixture(scope="module")
def emit(synthesized: Synthesized) -> Json:
    return synthesized.templates[STACK]


# -- API ----------------------------------------------------------------------------------


def test_every_route_invokes_its_own_function(emit: Json) -> None:
    targets = route_targets(emit)
    assert sorted(targets) == sorted(f"{r.method} {r.routed_by}" for r in ROUTES)
    functions = emit["Resources"]
    for route in ROUTES:
        function = functions[targets[f"{route.method} {route.routed_by}"]]
        assert module_of(function) == route.function
        assert function["Properties"]["MemorySize"] == route.memory_mb
        assert function["Properties"]["Timeout"] == route.timeout_s
    assert len(set(targets.values())) == len(ROUTES), "two routes share a function"


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_route_paths_are_legal_http_api_routes(route: Route) -> None:
    """A gateway's parameter is a whole segment: a route whose API path goes on after one
    (`{id}:trigger`) is routed by the segment whole, and no other route of its method takes it."""
    path = route.routed_by
    parts = path.split("/")[1:] if path != "/" else []  # `/` alone: the root route
    assert all(HTTP_API_PATH_PART.match(part) for part in parts), parts
    if route.gateway_path is not None:
        assert route.path.startswith(route.gateway_path) and route.path != route.gateway_path
        assert [r for r in ROUTES if (r.method, r.routed_by) == (route.method, path)] == [route]


def test_integrations_outlast_every_function(template: Template, emit: Json) -> None:
    """The gateway waits 30 s, its maximum; each function gives up first."""
    for integration in http_only(emit, resources(emit, "AWS::ApiGatewayV2::Integration")).values():
        props = integration["Properties"]
        assert (props["IntegrationType"], props["PayloadFormatVersion"], props["TimeoutInMillis"]) == (
            "AWS_PROXY",
            "2.0",
            constants.INTEGRATION_TIMEOUT_S * 1000,
        )
    routed = {route.function for route in ROUTES}
    for function in resources(emit, "AWS::Lambda::Function").values():
        if module_of(function) in routed:
            assert function["Properties"]["Timeout"] < constants.INTEGRATION_TIMEOUT_S


def test_long_polls_answer_before_the_gateway(emit: Json) -> None:
    (claim,) = [f for f in resources(emit, "AWS::Lambda::Function").values() if module_of(f) == "claim_jobs"]
    wait_ms = int(claim["Properties"]["Environment"]["Variables"]["EMIT_MAX_WAIT_MS"])
    # A last poll, the claims and the answer need a few seconds after the wait ends.
    assert wait_ms + 3_000 <= claim["Properties"]["Timeout"] * 1000 < constants.INTEGRATION_TIMEOUT_S * 1000


def test_stage_deploys_itself_and_logs_every_request(template: Template) -> None:
    template.has_resource_properties(
        "AWS::ApiGatewayV2::Stage",
        {
            "StageName": "$default",
            "AutoDeploy": True,
            "AccessLogSettings": {
                "DestinationArn": Match.any_value(),
                "Format": Match.string_like_regexp("requestId"),
            },
        },
    )


# -- functions ----------------------------------------------------------------------------


def test_functions_share_runtime_layers_and_observability(emit: Json) -> None:
    layers = resources(emit, "AWS::Lambda::LayerVersion")
    assert len(layers) == 2
    table = next(iter(resources(emit, "AWS::DynamoDB::Table")))
    bucket = next(iter(resources(emit, "AWS::S3::Bucket")))
    (queue,) = (
        name
        for name, queue in resources(emit, "AWS::SQS::Queue").items()
        if "RedrivePolicy" in queue["Properties"]
    )
    for function in resources(emit, "AWS::Lambda::Function").values():
        props = function["Properties"]
        variables = dict(props["Environment"]["Variables"])
        if module_of(function) in ("stream_handler", "clock_handler"):
            # The two that hand callbacks over learn where to.
            assert variables.pop("EMIT_CALLBACK_QUEUE_URL") == {"Ref": queue}
        traced = module_of(function) != "clock_handler"  # a trace a minute at rest: see below
        if not traced:
            assert variables.pop("POWERTOOLS_TRACE_DISABLED") == "true"
        # Wake (issue 19): those that answer wakeUrl or post hints learn it; those that hint,
        # where to hand the posts over and put hints off.
        if module_of(function) in WAKE_URL_MODULES:
            assert "Fn::Join" in variables.pop("EMIT_WAKE_URL")
        if module_of(function) in WAKE_LATER_MODULES:
            assert "Ref" in variables.pop("EMIT_WAKE_LATER_FUNCTION")
        assert props["Runtime"] == Functions.RUNTIME.name == "python3.13"
        assert props["Architectures"] == ["arm64"]
        assert props["TracingConfig"] == {"Mode": "Active" if traced else "PassThrough"}
        assert sorted(referenced(layer) for layer in props["Layers"]) == sorted(layers)
        assert "LogGroup" in props["LoggingConfig"]
        deployed = Config(table="<table>", bucket="<bucket>").environment()
        deployed |= {"EMIT_TABLE": {"Ref": table}, "EMIT_BUCKET": {"Ref": bucket}}
        assert variables == deployed | {
            "POWERTOOLS_SERVICE_NAME": "emit",
            "POWERTOOLS_METRICS_NAMESPACE": "Emit",
        }


WAKE_URL_MODULES = {"get_space", "update_space", "claim_jobs", "wake_later"}
"""The functions that answer `wakeUrl` or post to the connections (wake_later only)."""
WAKE_LATER_MODULES = {"stream_handler", "clock_handler", "update_name_policy", "reset_name_policy"}
"""The functions that hint: they hand the posts to wake_later and put hints off there."""


def _settings(function: Json) -> dict[str, str]:
    """A function's EMIT_* variables, each reference to a resource replaced by a name."""
    variables = function["Properties"]["Environment"]["Variables"]
    return {name: _text(value) for name, value in variables.items() if name.startswith("EMIT_")}


def _text(value: Any) -> str:
    """A variable's value: a reference replaced by a name; a joined one (the wake URL) with each
    reference a host-name-like part of its own."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(
            p if isinstance(p, str) else referenced(p).lower().replace("::", "-") for p in parts
        )
    return f"<{referenced(value)}>"


def test_the_environment_is_what_the_runtime_reads(emit: Json) -> None:
    """Each function's variables, as deployed, build the Runtime (the deployed functions'
    own wiring) with every setting of `shared.config` at its AWS value: none is set by
    the stack to one thing and read as another, none is left to a default the template
    does not show, and each reaches the part of the runtime it configures."""
    read = {field: Config.env(field).name for field in Config.model_fields}
    unset = {"dynamodb_endpoint", "s3_endpoint", "dev_token"}  # the region's own; no dev token on AWS
    for function in resources(emit, "AWS::Lambda::Function").values():
        settings = _settings(function)
        assert set(settings) <= set(read.values()), "every EMIT_* variable is a field of the model"
        hands_over = module_of(function) in ("stream_handler", "clock_handler")
        expected = set(read) - unset - (set() if hands_over else {"callback_queue_url"})
        expected -= set() if module_of(function) in WAKE_URL_MODULES else {"wake_url"}
        expected -= set() if module_of(function) in WAKE_LATER_MODULES else {"wake_later_function"}
        assert {field for field, name in read.items() if name in settings} == expected, module_of(function)
        built = Runtime.from_env(settings)
        names = {"table": settings["EMIT_TABLE"], "bucket": settings["EMIT_BUCKET"]}
        if hands_over:
            names["callback_queue_url"] = settings["EMIT_CALLBACK_QUEUE_URL"]
        for field in ("wake_url", "wake_later_function"):
            if Config.env(field).name in settings:
                names[field] = settings[Config.env(field).name]
        config = built.config
        assert config == Config(**names), "every other field at its default, the AWS value"
        # Claims and follow links alike pause by these (`shared.jobs.context`).
        assert built.context.config == QueueConfig(
            max_wait_ms=config.claim_wait_ms,
            poll_ms=config.poll_ms,
            poll_max_ms=config.poll_max_ms,
            claim_payload_bytes=config.claim_payload_bytes,
        )
        assert (built.settings.cache_ms, built.policies.cache_ms) == (
            config.settings_cache_ms,
            config.policy_cache_ms,
        )
        assert (
            built.leases.shards
            == built.jobs.deadlines.shards
            == built.timers.book.shards
            == config.book_shards
        )
        assert (
            built.sweeper.never_claimed.every_ms
            == built.stream.unclaimed_every_ms
            == config.unclaimed_every_ms
        )
        assert built.stream.tick_ms == config.clock_tick_ms
        assert built.targets.allow_private is config.allow_private_callbacks is False
        assert built.tokens.dev_token is None
        if hands_over:
            assert (
                isinstance(built.outbox, SqsOutbox) and built.outbox.queue_url == names["callback_queue_url"]
            )
        else:
            assert isinstance(built.outbox, LocalOutbox), (
                "no queue: a function that never hands callbacks over"
            )
        # Wake: a hinter hands its posts to wake_later and cannot post itself (no poster);
        # wake_later, which posts, hints by posting itself.
        hints_through_later = module_of(function) in WAKE_LATER_MODULES
        assert isinstance(built.wake.sender, LambdaSender) is hints_through_later
        assert isinstance(built.wake.later, LambdaLater) is hints_through_later
        assert (built.wake.poster is not None) is (module_of(function) in WAKE_URL_MODULES)


def test_the_deployed_settings_fit_aws() -> None:
    """The numbers AWS itself bounds: a long poll and its answer fit the gateway's wait and
    a Lambda response; a waiting worker learns of new work within a second."""
    deployed = Config(table="t")
    assert deployed.claim_wait_ms < constants.INTEGRATION_TIMEOUT_S * 1000
    assert deployed.claim_payload_bytes < 6 * 1000 * 1000
    assert deployed.poll_max_ms <= 1_000
    assert deployed.clock_tick_ms % 60_000 == 0, "EventBridge Scheduler's rates are whole minutes"


def test_callbacks_are_sent_by_a_function_of_their_own_fed_by_a_queue(emit: Json) -> None:
    """Never inside the stream's or the clock's loop: those hand callbacks to a standard
    queue, read by the sender with concurrency reserved for it, partial batch failures,
    a visibility timeout above its timeout, and a dead-letter queue of its own."""
    (sender_id,) = (
        name
        for name, function in resources(emit, "AWS::Lambda::Function").items()
        if module_of(function) == "callback_sender"
    )
    sender = emit["Resources"][sender_id]["Properties"]
    assert sender["ReservedConcurrentExecutions"] == constants.CALLBACK_SENDER_CONCURRENCY
    queues = resources(emit, "AWS::SQS::Queue")
    ((queue_id, queue),) = ((n, q) for n, q in queues.items() if "RedrivePolicy" in q["Properties"])
    props = queue["Properties"]
    assert "FifoQueue" not in props, "a standard queue: fair queues, by each message's space"
    assert props["VisibilityTimeout"] > sender["Timeout"]
    redrive = props["RedrivePolicy"]
    assert redrive["maxReceiveCount"] == constants.CALLBACK_MAX_RECEIVES
    dead_letters = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
    assert dead_letters in queues and dead_letters != queue_id
    watched = [
        a["Properties"]
        for a in resources(emit, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("Namespace") == "AWS/SQS"
    ]
    assert any(a["Dimensions"][0]["Value"] == {"Fn::GetAtt": [dead_letters, "QueueName"]} for a in watched)
    (mapping,) = (
        m["Properties"]
        for m in resources(emit, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [queue_id, "Arn"]}
    )
    assert mapping["FunctionName"] == {"Ref": sender_id}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"]["MaximumConcurrency"] == constants.CALLBACK_SENDER_CONCURRENCY


def test_every_function_logs_to_its_own_group_for_a_month(emit: Json) -> None:
    groups = resources(emit, "AWS::Logs::LogGroup")
    used = [
        referenced(f["Properties"]["LoggingConfig"]["LogGroup"])
        for f in resources(emit, "AWS::Lambda::Function").values()
    ]
    assert len(set(used)) == len(used) == len(ROUTES) + 3 + 4, (
        "every route's function, the stream's, the clock's, the callback sender's and wake's four"
    )
    assert all(groups[g]["Properties"]["RetentionInDays"] == 30 for g in used)


# -- data ---------------------------------------------------------------------------------


def test_table_is_the_one_the_store_creates(template: Template) -> None:
    request = create_table_request("mirror")
    template.resource_count_is("AWS::DynamoDB::Table", 1)
    template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": request["KeySchema"],
            "AttributeDefinitions": Match.array_equals(request["AttributeDefinitions"]),
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": name,
                    "KeySchema": request["GlobalSecondaryIndexes"][n]["KeySchema"],
                    "Projection": request["GlobalSecondaryIndexes"][n]["Projection"],
                }
                for n, name in enumerate((READY_INDEX,))
            ],
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "TimeToLiveSpecification": {"AttributeName": TTL_ATTRIBUTE, "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "DeletionProtectionEnabled": True,
        },
    )
    template.has_resource(
        "AWS::DynamoDB::Table", {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    )


def test_throwaway_stacks_are_deleted_with_their_data(throwaway: Template) -> None:
    throwaway.has_resource_properties("AWS::DynamoDB::Table", {"DeletionProtectionEnabled": False})
    for kind in ("AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::Logs::LogGroup"):
        throwaway.all_resources(kind, {"DeletionPolicy": "Delete"})


def test_bucket_is_private_encrypted_tls_only_and_expires_values(template: Template) -> None:
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
            "LifecycleConfiguration": {
                "Rules": [
                    Match.object_like(
                        {
                            "Status": "Enabled",
                            "ExpirationInDays": constants.BLOB_EXPIRY_DAYS,
                            "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                        }
                    )
                ]
            },
        },
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                )
            }
        },
    )


def test_values_outlive_the_longest_job_the_contract_allows() -> None:
    """A year's delay, a year unclaimed, a year of retention: 1,095 days, and a margin."""
    assert constants.BLOB_EXPIRY_DAYS > 3 * 365


# -- operations ---------------------------------------------------------------------------


def _alarms_by_name(emit: Json) -> dict[str, Json]:
    return {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in resources(emit, "AWS::CloudWatch::Alarm").values()
    }


def test_five_alarms_cover_what_58_did_and_notify_the_topic(emit: Json) -> None:
    """Every function's failures (one metric its log group feeds, not two alarms a function),
    the API's 5xx, the stream's iterator age and both dead-letter queues."""
    alarms = _alarms_by_name(emit)
    assert sorted(alarms) == sorted(
        f"{STACK}-{name}"
        for name in (
            "faults",
            "Api5xx",
            "stream_handler-iterator-age",
            "dead-letters",
            "callback-dead-letters",
        )
    )
    (topic,) = resources(emit, "AWS::SNS::Topic")
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": topic}]
        assert "MetricName" in alarm, "one metric each, read directly: $0.10 a month an alarm"
    faults = alarms[f"{STACK}-faults"]
    assert (faults["Namespace"], faults["MetricName"]) == (
        f"{constants.METRICS_NAMESPACE}/{STACK}",
        FAULTS_METRIC,
    )
    assert faults["Threshold"] == constants.FAULTS_THRESHOLD and "Dimensions" not in faults
    api = alarms[f"{STACK}-Api5xx"]
    assert (api["Namespace"], api["MetricName"], api["Threshold"]) == (
        "AWS/ApiGateway",
        "5xx",
        constants.API_5XX_THRESHOLD,
    )
    age = alarms[f"{STACK}-stream_handler-iterator-age"]
    assert age["MetricName"] == "IteratorAge" and age["Dimensions"][0]["Value"] == {
        "Ref": _function_of(emit, "stream_handler")
    }
    queues = {referenced(a["Dimensions"][0]["Value"]) for a in alarms.values() if a["Namespace"] == "AWS/SQS"}
    dead_letters = {
        n for n, q in resources(emit, "AWS::SQS::Queue").items() if "RedrivePolicy" not in q["Properties"]
    }
    assert queues == dead_letters and len(queues) == 2


def _faults_filters(emit: Json) -> dict[str, str]:
    """Log group logical id -> the pattern of its filter feeding the faults metric."""
    out = {}
    for f in resources(emit, "AWS::Logs::MetricFilter").values():
        (transformation,) = f["Properties"]["MetricTransformations"]
        assert transformation["MetricNamespace"] == f"{constants.METRICS_NAMESPACE}/{STACK}"
        assert transformation["MetricName"] == FAULTS_METRIC and transformation["MetricValue"] == "1"
        assert "DefaultValue" not in transformation, "a data point only for a fault: nothing billed at rest"
        out[referenced(f["Properties"]["LogGroupName"])] = f["Properties"]["FilterPattern"]
    return out


def test_every_functions_failures_and_every_refused_invoke_count_as_faults(emit: Json) -> None:
    filters = _faults_filters(emit)
    functions = resources(emit, "AWS::Lambda::Function").values()
    groups = {referenced(f["Properties"]["LoggingConfig"]["LogGroup"]) for f in functions}
    # Every stage's refused invokes are faults: the HTTP API's and wake's WebSocket API's.
    accesses = {
        referenced(s["Properties"]["AccessLogSettings"]["DestinationArn"])
        for s in resources(emit, "AWS::ApiGatewayV2::Stage").values()
    }
    assert len(accesses) == 2 and set(filters) == groups | accesses
    for group in groups:
        assert filters[group] == " ".join(f'?"{term}"' for term in FUNCTION_FAULTS)
    either = " || ".join(f'($.integrationStatus = "{s}")' for s in INVOKE_FAILURES)
    for access in accesses:
        assert filters[access] == f"{{ {either} }}"


def test_the_services_own_error_lines_are_not_faults() -> None:
    """An error the service answers (a 500, logged by Powertools as JSON) is the 5xx alarm's,
    not a fault; the Python runtime's line for an exception that escaped the handler is one."""
    from shared.observability import logger  # noqa: PLC0415 - the functions' own logger

    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    out = io.StringIO()
    before = handler.setStream(out)
    try:
        try:
            {}["id"]
        except KeyError:
            logger.exception("unexpected error", extra={"action": "request"})
    finally:
        handler.setStream(before)
    line = out.getvalue()
    assert '"level":"ERROR"' in line.replace(" ", "") and "Traceback" in line
    assert not [term for term in FUNCTION_FAULTS if term in line], line
    # awslambdaric, text format: "[ERROR] <type>: <message>", then the traceback.
    assert [term for term in FUNCTION_FAULTS if term in "[ERROR] KeyError: 'id'\rTraceback (most recent"]


def test_the_dashboard_only_when_asked_for(emit: Json, throwaway: Template) -> None:
    """`-c dashboard=true` (the throwaway stack here) adds it and its output; the default has neither."""
    assert not resources(emit, "AWS::CloudWatch::Dashboard")
    assert constants.DASHBOARD_OUTPUT not in emit["Outputs"]
    throwaway.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    assert constants.DASHBOARD_OUTPUT in throwaway.to_json()["Outputs"]


def test_the_jobs_alarms_only_when_their_thresholds_are_given(emit: Json, throwaway: Template) -> None:
    """The failure rate (metric math over the stream's JobsFailed and JobsCompleted, only once
    enough jobs ended) and the oldest claimable age (the clock's), each with its flag's threshold."""
    assert not {f"{STACK}-failure-rate", f"{STACK}-oldest-claimable-age"} & set(_alarms_by_name(emit))
    alarms = _alarms_by_name(throwaway.to_json())
    rate = alarms[f"{THROWAWAY}-failure-rate"]
    assert rate["Threshold"] == 0.05
    expression = next(m for m in rate["Metrics"] if "Expression" in m)["Expression"]
    assert "f / (f + c)" in expression and ">= 10" in expression
    names = {m["MetricStat"]["Metric"]["MetricName"] for m in rate["Metrics"] if "MetricStat" in m}
    assert names == {"JobsFailed", "JobsCompleted"}
    age = alarms[f"{THROWAWAY}-oldest-claimable-age"]
    assert (age["MetricName"], age["Statistic"], age["Threshold"]) == ("OldestClaimableAge", "Maximum", 900)


@pytest.mark.parametrize(
    ("value", "message"),
    [("lots", "give a number$"), ("0", "above 0 and at most 1$"), ("1.5", "above 0 and at most 1$")],
)
def test_a_bad_alarm_threshold_stops_the_synthesis_naming_its_flag(value: str, message: str) -> None:
    app = App(context={constants.FAILURE_RATE_ALARM_CONTEXT: value})
    with pytest.raises(ValueError, match=f"-c failureRateAlarm='{value}': .*{message}"):
        number(app, constants.FAILURE_RATE_ALARM_CONTEXT, high=1.0)


def test_a_tick_that_cannot_run_is_dead_lettered(emit: Json) -> None:
    """The scheduler's undelivered ticks and Lambda's unrun ones (throttled, or failing every
    retry) reach the alarmed dead-letter queue within two minutes. (The clock is not traced, a
    trace a minute at rest: `test_functions_share_runtime_layers_and_observability`.)"""
    clock = _function_of(emit, "clock_handler")
    (schedule,) = resources(emit, "AWS::Scheduler::Schedule").values()
    dead_letters = referenced(schedule["Properties"]["Target"]["DeadLetterConfig"]["Arn"])
    (config,) = (
        c
        for c in resources(emit, "AWS::Lambda::EventInvokeConfig").values()
        if referenced(c["Properties"]["FunctionName"]) == clock
    )
    props = config["Properties"]
    assert referenced(props["DestinationConfig"]["OnFailure"]["Destination"]) == dead_letters
    assert props["MaximumEventAgeInSeconds"] == constants.CLOCK_MAX_EVENT_AGE_S
    watched = {
        referenced(a["Dimensions"][0]["Value"]) for a in _alarms_by_name(emit).values() if "Dimensions" in a
    }
    assert dead_letters in watched


def test_the_readme_counts_the_alarms_and_functions_the_stack_makes(emit: Json) -> None:
    """The README's cost at rest is priced per alarm metric: its figures must follow the stack."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    found = re.search(
        r"\| (\d+) alarms \(faults of (\d+) functions, .*?\), reading (\d+) metrics, "
        r"\$0\.10 a metric \| \$(\d+\.\d\d) \|",
        readme,
    )
    assert found, "the README's 'At rest' table has no alarms row"
    alarms, functions, metrics, dollars = int(found[1]), int(found[2]), int(found[3]), found[4]
    assert functions == len(resources(emit, "AWS::Lambda::Function"))
    assert alarms == metrics == len(resources(emit, "AWS::CloudWatch::Alarm"))
    assert dollars == f"{metrics * 0.10:.2f}"


def test_outputs_name_the_api_and_the_table(template: Template, emit: Json) -> None:
    outputs = emit["Outputs"]
    table = next(iter(resources(emit, "AWS::DynamoDB::Table")))
    assert outputs[constants.TABLE_NAME_OUTPUT]["Value"] == {"Ref": table}
    assert "execute-api" in str(outputs[constants.API_URL_OUTPUT]["Value"])
    assert {constants.BUCKET_NAME_OUTPUT, constants.ALARM_TOPIC_OUTPUT} <= set(outputs)


# -- triggers -----------------------------------------------------------------------------


def _function_of(emit: Json, module: str) -> str:
    (found,) = [fid for fid, f in resources(emit, "AWS::Lambda::Function").items() if module_of(f) == module]
    return found


def test_the_stream_reaches_its_handler_filtered_and_dead_lettered_unbisected(
    template: Template, emit: Json
) -> None:
    handler = _function_of(emit, "stream_handler")
    (mapping,) = (
        m
        for m in resources(emit, "AWS::Lambda::EventSourceMapping").values()
        if referenced(m["Properties"]["FunctionName"]) == handler
    )
    props = mapping["Properties"]
    assert referenced(props["FunctionName"]) == handler
    assert props["BisectBatchOnFunctionError"] is False  # the counts' marks (shared/store/tallies.py)
    assert 0 < props["MaximumRetryAttempts"] <= 10 and props["MaximumRecordAgeInSeconds"] > 0
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BatchSize"] == constants.STREAM_BATCH_SIZE
    queue = referenced(props["DestinationConfig"]["OnFailure"]["Destination"])
    assert emit["Resources"][queue]["Type"] == "AWS::SQS::Queue"
    patterns = [json.loads(f["Pattern"]) for f in props["FilterCriteria"]["Filters"]]
    finished, removed, claimable, claimed = patterns
    # Wake (issue 19): a pending job in the ready index (the handler compares the images).
    # The counts (shared/counts.py): every job made (in the ready index), claimed, finished.
    assert claimable["dynamodb"]["NewImage"] == {
        "status": {"S": ["PENDING"]},
        "gsk": {"S": [{"exists": True}]},
    }
    assert claimed["dynamodb"]["OldImage"] == {"status": {"S": ["PENDING"]}}
    assert claimed["dynamodb"]["NewImage"] == {"status": {"S": ["RUNNING"]}}
    assert set(finished["dynamodb"]["NewImage"]["status"]["S"]) == {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "STALLED",
    }
    assert finished["dynamodb"]["OldImage"]["status"]["S"] == ["PENDING", "RUNNING"]
    assert removed["dynamodb"]["OldImage"] == {"ttl": {"N": [{"exists": True}]}}
    assert all(set(p) == {"dynamodb"} for p in patterns), "DynamoDB mappings filter on the dynamodb key only"


def test_the_clock_ticks_every_minute_and_says_so(emit: Json) -> None:
    handler = _function_of(emit, "clock_handler")
    (schedule,) = resources(emit, "AWS::Scheduler::Schedule").values()
    props = schedule["Properties"]
    assert props["ScheduleExpression"] == "rate(1 minute)"
    assert props["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert referenced(props["Target"]["Arn"]) == handler
    assert json.loads(props["Target"]["Input"]) == {"tickMs": Config.default("clock_tick_ms")}
