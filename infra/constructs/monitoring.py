"""What an operator watches: alarms that notify one SNS topic, and one dashboard."""

from __future__ import annotations

from aws_cdk import Aws, Duration, Stack
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import constants
from infra.nag import acknowledge

_PERIOD = Duration.seconds(constants.ALARM_PERIOD_S)
_WIDE = 12
_NARROW = 8


class Monitoring(Construct):
    """Alarms on what needs a person (function errors and throttles, API 5xx, dead
    letters, a stream falling behind) and a dashboard of the rest. The other constructs
    call `watch_*` for what they create, so whatever joins the stack is watched too."""

    def __init__(self, scope: Construct, construct_id: str, *, alarm_email: str | None) -> None:
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

        # Dashboard names are global to the account: the region keeps two regions' stacks apart.
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{self._prefix}-{Aws.REGION}"
        )
        # Lambda metric -> (its graph, the statistic it is read with); each function adds a line.
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
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Jobs",
                width=_WIDE,
                left=[
                    cloudwatch.Metric(
                        namespace=constants.METRICS_NAMESPACE,
                        metric_name=name,
                        dimensions_map={"service": constants.SERVICE},
                        statistic="Sum",
                        period=_PERIOD,
                    )
                    for name in ("JobsCreated", "JobsClaimed")
                ],
            ),
        )
        self.dashboard.add_widgets(*(graph for graph, _ in self._function_graphs.values()))

    # -- what the other constructs hand in ----------------------------------------------

    def watch_api(self, api: apigwv2.HttpApi) -> None:
        self._alarm(
            "Api5xx",
            api.metric_server_error(period=_PERIOD, statistic="Sum"),
            threshold=constants.API_5XX_THRESHOLD,
            description="The API answered 5xx: a function failed or timed out, or the gateway "
            "could not reach it. See the access logs and the functions' Errors.",
        )
        self.dashboard.add_widgets(
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
        self._alarm(
            f"{module}-errors",
            function.metric_errors(period=_PERIOD, statistic="Sum"),
            threshold=constants.FUNCTION_ERRORS_THRESHOLD,
            description=f"functions/{module}.py failed outside its error handling (crash, "
            "timeout or out of memory). See its log group.",
        )
        self._alarm(
            f"{module}-throttles",
            function.metric_throttles(period=_PERIOD, statistic="Sum"),
            threshold=constants.FUNCTION_THROTTLES_THRESHOLD,
            description=f"functions/{module}.py was throttled: the account's Lambda concurrency "
            "is exhausted. Raise the quota or find what holds it.",
        )
        for metric_name, (graph, statistic) in self._function_graphs.items():
            graph.add_left_metric(
                function.metric(metric_name, period=_PERIOD, statistic=statistic, label=module)
            )

    def watch_table(self, table: dynamodb.Table) -> None:
        self.dashboard.add_widgets(
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
        self.dashboard.add_widgets(cloudwatch.GraphWidget(title=title, width=_WIDE, left=[depth]))

    def watch_stream(self, module: str, function: lambda_.Function) -> None:
        age = function.metric("IteratorAge", period=_PERIOD, statistic="Maximum")
        self._alarm(
            f"{module}-iterator-age",
            age,
            threshold=constants.ITERATOR_AGE_THRESHOLD_MS,
            description=f"functions/{module}.py is falling behind the table's stream; records "
            "expire after 24 hours.",
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Stream iterator age", width=_WIDE, left=[age])
        )

    # -- helpers ------------------------------------------------------------------------

    def _alarm(self, name: str, metric: cloudwatch.IMetric, *, threshold: float, description: str) -> None:
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
