"""What an operator watches: five alarms that notify one SNS topic, two more on the jobs when
their thresholds are given (`-c failureRateAlarm=0.05`, `-c oldestClaimableAlarmSeconds=900`),
and (`-c dashboard=true`) a dashboard."""

from __future__ import annotations

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import constants
from infra.nag import acknowledge

_PERIOD = Duration.seconds(constants.ALARM_PERIOD_S)
_WIDE = 12
_NARROW = 8

FAULTS_METRIC = "Faults"
"""The one metric the stack's log groups feed (in the namespace `Emit/<stack name>`)."""

FUNCTION_FAULTS = ("[ERROR]", "Task timed out", "Runtime exited", "Status: timeout", "Status: error")
"""What Lambda writes into a function's log group (the text log format, the functions'
default) when an invocation fails outside the handler's own error handling, the failures
Lambda's `Errors` metric counts: the Python runtime's `[ERROR] <type>: <message>` for an
exception that escaped the handler or a failed start (`Runtime.ImportModuleError`, ...),
`Task timed out after ...` and a report's `Status: timeout` for a timeout, `Runtime exited
with error` and `Status: error` for a crash or running out of memory. The service's own
lines are Powertools' JSON (`"level":"ERROR"` for an error it answered), never these."""

INVOKE_FAILURES = ("429", "5*")
"""`integrationStatus` values of the API's access log for a request whose function could not
be invoked: the status Lambda's Invoke answered the gateway with (not the function's own),
429 when throttled, 5xx when Lambda itself failed."""


class Monitoring(Construct):
    """Alarms on what needs a person, on as few metrics as cover it: CloudWatch bills an alarm
    for each metric it reads, $0.10 a month, metric math alike (an alarm on the sum of 27
    functions' `Errors` costs what 27 alarms cost, and a composite alarm $0.50 more on top
    of those it combines). So:

    - `faults`, on one metric the log groups feed: each function's log group counts Lambda's
      own lines for a failed invocation (FUNCTION_FAULTS), the API's access log the requests
      whose function could not be invoked (INVOKE_FAILURES). Only a fault writes a data
      point, so the metric costs nothing while nothing fails (custom metrics are billed by
      the hours they receive data).
    - `api-5xx`, `dead-letters`, `callback-dead-letters`, `<stream>-iterator-age`: AWS's own
      metrics, one each.

    The background functions' throttles are alarmed by what they lead to: a tick not run
    within two minutes goes to the dead-letter queue (`Triggers.clock`), a throttled stream
    falls behind (its iterator age) and then dead-letters its records, and the callback
    sender is never throttled (its reserved concurrency is its event source's most), its
    messages going to their dead-letter queue after five receives.

    The other constructs call `watch_*` for what they create, so whatever joins the stack is
    watched too; with `dashboard`, each adds its graphs to the dashboard."""

    def __init__(
        self, scope: Construct, construct_id: str, *, alarm_email: str | None, dashboard: bool = False
    ) -> None:
        super().__init__(scope, construct_id)
        self._prefix = Stack.of(self).stack_name
        self.topic = sns.Topic(self, "Alarms", display_name=f"{self._prefix} alarms", enforce_ssl=True)
        acknowledge(
            self.topic,
            "AwsSolutions-SNS2",
            "The topic carries only alarm state changes, no data. CloudWatch alarms cannot "
            "publish to a topic under the AWS-managed SNS key, and a customer-managed key would "
            "cost $1 a month at rest for nothing secret.",
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        self._action = actions.SnsAction(self.topic)

        self.faults_namespace = f"{constants.METRICS_NAMESPACE}/{self._prefix}"
        """The stack's own: two stacks in one account never count each other's faults."""
        self.faults = cloudwatch.Metric(
            namespace=self.faults_namespace,
            metric_name=FAULTS_METRIC,
            statistic="Sum",
            period=_PERIOD,
        )
        self._alarm(
            "faults",
            self.faults,
            threshold=constants.FAULTS_THRESHOLD,
            description="A function failed outside its error handling (a crash, a timeout, out of "
            "memory, a failed start), or a request's function could not be invoked (throttled: "
            "the account's Lambda concurrency is exhausted; or Lambda failed). Which: in Logs "
            "Insights, over the stack's log groups, `filter @message like /\\[ERROR\\]|Task timed "
            "out|Runtime exited|Status: (timeout|error)/ | stats count() by @log`, and over the "
            "API's access log, `filter integrationStatus = '429' or integrationStatus like /^5/`; "
            "the functions' Errors and Throttles metrics say it too.",
        )

        self.dashboard: cloudwatch.Dashboard | None = None
        """Only with `dashboard`: $3 a month at rest (beyond an account's first three)."""
        # Lambda metric -> (its graph, the statistic it is read with); each function adds a line.
        self._function_graphs: dict[str, tuple[cloudwatch.GraphWidget, str]] = {}
        if dashboard:
            self._start_dashboard()

    def _start_dashboard(self) -> None:
        # Dashboard names are global to the account: the region keeps two regions' stacks apart.
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{self._prefix}-{Aws.REGION}"
        )
        self._function_graphs = {
            metric: (cloudwatch.GraphWidget(title=title, width=_NARROW, left=[]), statistic)
            for metric, title, statistic in (
                ("Invocations", "Invocations by function", "Sum"),
                ("Errors", "Errors by function", "Sum"),
                ("Throttles", "Throttles by function", "Sum"),
                ("Duration", "Duration p99 by function", "p99"),
                ("ConcurrentExecutions", "Concurrency by function", "Maximum"),
            )
        }
        self._graphs(
            cloudwatch.GraphWidget(
                title="Jobs",
                width=_WIDE,
                left=[
                    self._jobs_metric(name, "Sum")
                    for name in ("JobsCreated", "JobsClaimed", "JobsCompleted", "JobsFailed")
                ],
            ),
            cloudwatch.GraphWidget(
                title="Faults (the faults alarm's metric)", width=_WIDE, left=[self.faults]
            ),
        )
        self._graphs(*(graph for graph, _ in self._function_graphs.values()))

    # -- what the other constructs hand in ----------------------------------------------

    def watch_api(self, api: apigwv2.HttpApi, *, access_logs: logs.ILogGroup) -> None:
        self._alarm(
            "Api5xx",
            api.metric_server_error(period=_PERIOD, statistic="Sum"),
            threshold=constants.API_5XX_THRESHOLD,
            description="The API answered 5xx: a function failed or timed out, or the gateway "
            "could not reach it. See the access logs and the functions' Errors.",
        )
        self.count_invoke_failures("api-invoke-failures", access_logs)
        self._graphs(
            cloudwatch.GraphWidget(
                title="API requests and errors",
                width=_WIDE,
                left=[
                    api.metric_count(period=_PERIOD, statistic="Sum"),
                    api.metric_client_error(period=_PERIOD, statistic="Sum"),
                    api.metric_server_error(period=_PERIOD, statistic="Sum"),
                ],
            ),
            cloudwatch.GraphWidget(
                title="API latency p99",
                width=_WIDE,
                left=[
                    api.metric_latency(period=_PERIOD, statistic="p99"),
                    api.metric_integration_latency(period=_PERIOD, statistic="p99"),
                ],
            ),
        )

    def watch_function(self, module: str, function: lambda_.Function) -> None:
        """Its failed invocations count as faults (from its log group: `Functions` gives every
        function one of its own)."""
        self._count_faults(
            f"{module}-faults", function.log_group, logs.FilterPattern.any_term(*FUNCTION_FAULTS)
        )
        for metric_name, (graph, statistic) in self._function_graphs.items():
            graph.add_left_metric(
                function.metric(metric_name, period=_PERIOD, statistic=statistic, label=module)
            )

    def watch_table(self, table: dynamodb.Table) -> None:
        self._graphs(
            cloudwatch.GraphWidget(
                title="Table capacity used",
                width=_WIDE,
                left=[
                    table.metric_consumed_read_capacity_units(period=_PERIOD, statistic="Sum"),
                    table.metric_consumed_write_capacity_units(period=_PERIOD, statistic="Sum"),
                ],
            ),
            cloudwatch.GraphWidget(
                title="Table throttles",
                width=_WIDE,
                left=[
                    table.metric(name, period=_PERIOD, statistic="Sum")
                    for name in ("ReadThrottleEvents", "WriteThrottleEvents")
                ],
            ),
        )

    def watch_dead_letters(
        self,
        queue: sqs.Queue,
        *,
        name: str = "dead-letters",
        title: str = "Dead letters",
        description: str = "Stream records or clock ticks were given up on; their metadata is in "
        "the dead-letter queue. Inspect, fix, then replay or purge.",
    ) -> None:
        depth = queue.metric_approximate_number_of_messages_visible(period=_PERIOD, statistic="Maximum")
        self._alarm(name, depth, threshold=constants.DEAD_LETTER_THRESHOLD, description=description)
        self._graphs(cloudwatch.GraphWidget(title=title, width=_WIDE, left=[depth]))

    def watch_stream(self, module: str, function: lambda_.Function) -> None:
        age = function.metric("IteratorAge", period=_PERIOD, statistic="Maximum")
        self._alarm(
            f"{module}-iterator-age",
            age,
            threshold=constants.ITERATOR_AGE_THRESHOLD_MS,
            description=f"functions/{module}.py is falling behind the table's stream (failing, "
            "slow, or throttled); records expire after 24 hours.",
        )
        self._graphs(cloudwatch.GraphWidget(title="Stream iterator age", width=_WIDE, left=[age]))

    def watch_jobs(self, *, failure_rate: float | None, oldest_claimable_s: float | None) -> None:
        """The alarms on the jobs themselves, each only when its threshold is given (context
        flags, `infra.constants`): the share of ending jobs that failed, from the stream's
        `JobsFailed` and `JobsCompleted`; and the oldest claimable job's age, which the
        clock publishes while anything waits (`shared.backlog`)."""
        failed, completed = (self._jobs_metric(n, "Sum") for n in ("JobsFailed", "JobsCompleted"))
        rate = cloudwatch.MathExpression(
            expression=f"IF(f + c >= {constants.FAILURE_RATE_MIN_JOBS}, f / (f + c), 0)",
            using_metrics={"f": failed, "c": completed},
            label="Share of ending jobs that failed",
            period=_PERIOD,
        )
        age = self._jobs_metric("OldestClaimableAge", "Maximum")
        if failure_rate is not None:
            self._alarm(
                "failure-rate",
                rate,
                threshold=failure_rate,
                description=f"More than {failure_rate:.0%} of the jobs that ended in five minutes "
                "failed. Which names: GET /v1/spaces/{space}/metrics, or the dashboard's overview; "
                "why: the failed jobs' errors (GET .../jobs?status=FAILED).",
            )
        if oldest_claimable_s is not None:
            self._alarm(
                "oldest-claimable-age",
                age,
                threshold=oldest_claimable_s,
                description=f"A claimable job has waited {oldest_claimable_s:.0f} s or more: no "
                "worker asks for its name, too few do, or a pause or limit holds it. Which: GET "
                "/v1/spaces/{space}/diagnostics.",
            )
        self._graphs(
            cloudwatch.GraphWidget(title="Jobs ending failed (share)", width=_WIDE, left=[rate]),
            cloudwatch.GraphWidget(
                title="Claimable backlog and oldest age (s)",
                width=_WIDE,
                left=[self._jobs_metric("ClaimableBacklog", "Maximum")],
                right=[age],
            ),
        )

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def _jobs_metric(name: str, statistic: str) -> cloudwatch.Metric:
        """A metric the functions publish (Powertools' `service` dimension)."""
        return cloudwatch.Metric(
            namespace=constants.METRICS_NAMESPACE,
            metric_name=name,
            dimensions_map={"service": constants.SERVICE},
            statistic=statistic,
            period=_PERIOD,
        )

    def count_invoke_failures(self, name: str, access_logs: logs.ILogGroup) -> None:
        """An API stage's refused or failed invokes (throttled, or the function failed) count
        as faults: its access log's `integrationStatus`."""
        self._count_faults(
            name,
            access_logs,
            logs.FilterPattern.any(
                *(logs.FilterPattern.string_value("$.integrationStatus", "=", s) for s in INVOKE_FAILURES)
            ),
        )

    def _count_faults(self, name: str, log_group: logs.ILogGroup, pattern: logs.IFilterPattern) -> None:
        """Each event of `log_group` matching `pattern` adds one to the faults metric; nothing
        is written while nothing matches (no default value)."""
        logs.MetricFilter(
            self,
            name,
            log_group=log_group,
            filter_pattern=pattern,
            metric_namespace=self.faults_namespace,
            metric_name=FAULTS_METRIC,
            metric_value="1",
            unit=cloudwatch.Unit.COUNT,
        )

    def _graphs(self, *widgets: cloudwatch.IWidget) -> None:
        if self.dashboard is not None:
            self.dashboard.add_widgets(*widgets)

    def _alarm(self, name: str, metric: cloudwatch.IMetric, *, threshold: float, description: str) -> None:
        """Raised at `threshold` or above, for one period; no data (nothing happened) is no alarm."""
        alarm = cloudwatch.Alarm(
            self,
            name,
            alarm_name=f"{self._prefix}-{name}",
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(self._action)
        alarm.add_ok_action(self._action)
