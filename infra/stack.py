"""The service's one stack: it composes the constructs and names the outputs, nothing else."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack, Tags
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra import constants, stream_filters
from infra.constructs.api import Api
from infra.constructs.data import Data
from infra.constructs.functions import Functions
from infra.constructs.monitoring import Monitoring
from infra.constructs.triggers import Triggers
from infra.constructs.wake import Wake, function_of

STREAM_FILTERS = [lambda_.FilterCriteria.filter(p) for p in stream_filters.PATTERNS]
"""The stream trigger's filters (`infra.stream_filters`)."""


class EmitStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        throwaway: bool = False,
        alarm_email: str | None = None,
        dashboard: bool = False,
        failure_rate_alarm: float | None = None,
        oldest_claimable_alarm_s: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        Tags.of(self).add("service", constants.SERVICE)  # for Cost Explorer: what this stack costs

        self.data = Data(self, "Data", throwaway=throwaway)
        self.monitoring = Monitoring(self, "Monitoring", alarm_email=alarm_email, dashboard=dashboard)
        self.monitoring.watch_table(self.data.table)
        self.monitoring.watch_jobs(
            failure_rate=failure_rate_alarm, oldest_claimable_s=oldest_claimable_alarm_s
        )
        self.functions = Functions(
            self, "Functions", data=self.data, monitoring=self.monitoring, throwaway=throwaway
        )
        self.api = Api(self, "Api", functions=self.functions, throwaway=throwaway)
        self.monitoring.watch_api(self.api.http_api, access_logs=self.api.access_logs)

        self.triggers = Triggers(
            self, "Triggers", data=self.data, functions=self.functions, monitoring=self.monitoring
        )
        # The stream handler applies a batch of records and hands its callbacks over.
        stream = self.triggers.stream_processor(
            "stream_handler", filters=STREAM_FILTERS, memory_mb=512, timeout_s=60
        )
        # A tick expires leases and hands due callbacks over in bounded batches, well inside a minute.
        clock = self.triggers.clock("clock_handler", memory_mb=256, timeout_s=50)
        # Callbacks are sent by a function of their own, never in the stream's or the clock's loop.
        self.triggers.callback_sender(
            "callback_sender",
            handed_over_by=[stream, clock],
            memory_mb=256,
            timeout_s=constants.CALLBACK_SENDER_TIMEOUT_S,
            concurrency=constants.CALLBACK_SENDER_CONCURRENCY,
        )

        # Wake (issue 19): the WebSocket API workers listen on. Only its own wake_later posts
        # to the connections (`Wake.posted_by`, done by the construct); the functions that
        # hint hand their posts and their put-off hints to it (`hinted_by`): the stream (a
        # job made claimable, room a running job let go of) and the name policy's writes (a
        # name resumed or given room, hinted once claims see it), and the clock (a delay or
        # backoff ended past what wake_later puts off, from the timer book).
        self.wake = Wake(self, "Wake", functions=self.functions, throwaway=throwaway)
        self.monitoring.count_invoke_failures("wake-invoke-failures", self.wake.access_logs)
        self.wake.answered_by(
            function_of(self.functions, m) for m in ("get_space", "update_space", "claim_jobs")
        )
        self.wake.hinted_by(
            [
                stream,
                clock,
                *(function_of(self.functions, m) for m in ("update_name_policy", "reset_name_policy")),
            ]
        )

        self._output(constants.API_URL_OUTPUT, self.api.url, "The API's base URL")
        self._output(constants.TABLE_NAME_OUTPUT, self.data.table.table_name, "The DynamoDB table")
        self._output(
            constants.BUCKET_NAME_OUTPUT, self.data.bucket.bucket_name, "The bucket for large values"
        )
        self._output(constants.ALARM_TOPIC_OUTPUT, self.monitoring.topic.topic_arn, "Subscribe to get alarms")
        if self.monitoring.dashboard is not None:
            self._output(
                constants.DASHBOARD_OUTPUT, self.monitoring.dashboard.dashboard_name, "The dashboard"
            )
        self._output(constants.WAKE_URL_OUTPUT, self.wake.url, "Where workers listen for hints (wakeUrl)")

    def _output(self, key: str, value: str, description: str) -> None:
        CfnOutput(self, key, value=value, description=description).override_logical_id(key)
