"""Background work: the table's stream and a clock, each driving one function.

Each handler joins the stack with one call in `infra/stack.py`, once its module is in
`functions/` and what it may touch is in `infra.access.ACCESS`:

    self.triggers.stream_processor("<module>", filters=[...], memory_mb=..., timeout_s=...)
    self.triggers.clock("<module>", memory_mb=..., timeout_s=...)
    self.triggers.callback_sender("<module>", handed_over_by=[...], memory_mb=..., ...)

The stream and the clock share one dead-letter queue (created with the first of them) and
its alarm; the callback sender's queue has a dead-letter queue and an alarm of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_scheduler_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import constants
from infra.constructs.data import Data
from infra.constructs.functions import Functions
from infra.constructs.monitoring import Monitoring
from infra.nag import acknowledge, logical_id
from shared.config import Config


class Triggers(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, data: Data, functions: Functions, monitoring: Monitoring
    ) -> None:
        super().__init__(scope, construct_id)
        self._data = data
        self._functions = functions
        self._monitoring = monitoring
        self._dead_letters: sqs.Queue | None = None

    @property
    def dead_letters(self) -> sqs.Queue:
        """Where the stream mapping sends the metadata of records it gave up on, and the
        scheduler the ticks it could not deliver; any message raises an alarm."""
        if self._dead_letters is None:
            queue = self._dead_letter_queue(
                "DeadLetters", "This queue is the dead-letter queue: what lands here stays for an operator."
            )
            self._monitoring.watch_dead_letters(queue)
            self._dead_letters = queue
        return self._dead_letters

    def _dead_letter_queue(self, construct_id: str, reason: str) -> sqs.Queue:
        """A dead-letter queue (kept long, encrypted, SSL only); `reason`: why it has none of its own."""
        queue = sqs.Queue(
            self,
            construct_id,
            retention_period=Duration.days(constants.DEAD_LETTER_RETENTION_DAYS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        acknowledge(queue, "AwsSolutions-SQS3", reason)
        return queue

    def stream_processor(
        self,
        module: str,
        *,
        filters: Sequence[Mapping[str, Any]],
        memory_mb: int,
        timeout_s: int,
        description: str = "DynamoDB stream handler",
    ) -> lambda_.Function:
        """`functions/<module>.py`, invoked with batches of the table's stream records.

        `filters` are `lambda_.FilterCriteria.filter({...})` patterns; records matching
        none are dropped before any invocation (and cost nothing). Patterns on the
        `dynamodb` key (e.g. `{"dynamodb": {"NewImage": {"status": {"S": ["FAILED"]}}}}`)
        are the documented kind [4.4]; re-check `eventName` in the handler. Delivery is
        at least once [4.2]: the handler must be idempotent.

        A failing batch is split in halves to isolate the bad record, retried a bounded
        number of times, and then its metadata goes to the dead-letter queue, so one
        poison record can never block its shard [4.3].
        """
        function = self._functions.add(
            module, memory_mb=memory_mb, timeout_s=timeout_s, description=description
        )
        function.add_event_source(
            sources.DynamoEventSource(
                self._data.table,
                # From the oldest record the stream keeps (24 h): nothing written while the
                # mapping was being created is skipped.
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                filters=filters,
                batch_size=constants.STREAM_BATCH_SIZE,
                max_batching_window=Duration.seconds(constants.STREAM_BATCHING_WINDOW_S),
                # No bisection: a retry starts where the batch started or at the record that
                # failed (reported one by one), where the counts' marks are (shared/store/tallies.py).
                bisect_batch_on_error=False,
                retry_attempts=constants.STREAM_RETRY_ATTEMPTS,
                max_record_age=Duration.seconds(constants.STREAM_MAX_RECORD_AGE_S),
                report_batch_item_failures=True,
                on_failure=sources.SqsDlq(self.dead_letters),
            )
        )
        if function.role is not None:
            acknowledge(
                function.role,
                "AwsSolutions-IAM5[Resource::*]",
                "Two statements need `*`: X-Ray's PutTraceSegments and PutTelemetryRecords, "
                "and dynamodb:ListStreams, none of which supports resource-level permissions. "
                "The stream's own reads are scoped to its ARN.",
            )
        self._monitoring.watch_stream(module, function)
        return function

    def clock(
        self, module: str, *, memory_mb: int, timeout_s: int, description: str = "Clock: runs every minute"
    ) -> lambda_.Function:
        """`functions/<module>.py`, invoked every `clock_tick_ms` (`shared.config`: once a
        minute, EventBridge Scheduler's finest grain [5.1, 5.2]). Delivery is retried [5.7],
        so ticks must be idempotent.

        A tick that cannot run within CLOCK_MAX_EVENT_AGE_S goes to the dead-letter queue,
        whose alarm fires: one the scheduler could not deliver, and one Lambda could not run
        when invoked asynchronously (throttled, or failing every retry), which Lambda would
        otherwise keep trying for six hours and then drop.

        Not traced: a tick a minute would be 43,800 traces a month at rest ($0.22 past X-Ray's
        free 100,000), and a tick's work is in its metrics and its duration."""
        function = self._functions.add(
            module,
            memory_mb=memory_mb,
            timeout_s=timeout_s,
            description=description,
            tracing=lambda_.Tracing.PASS_THROUGH,
        )
        function.configure_async_invoke(
            max_event_age=Duration.seconds(constants.CLOCK_MAX_EVENT_AGE_S),
            retry_attempts=constants.CLOCK_RETRY_ATTEMPTS,
            on_failure=destinations.SqsDestination(self.dead_letters),
        )
        role = iam.Role(
            self,
            "ClockRole",
            description=f"EventBridge Scheduler: invoke functions/{module}.py",
            # Only schedules of this account may use the role (the confused-deputy guard).
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
            ),
        )
        acknowledge(
            role,
            f"AwsSolutions-IAM5[Resource::<{logical_id(function)}.Arn>:*]",
            "Lambda's invoke grant covers the function and its qualified versions (`:*`); the "
            "role can invoke this one function and nothing else.",
        )
        tick_ms = self._functions.config.clock_tick_ms
        scheduler.Schedule(
            self,
            "Clock",
            description=description,
            schedule=scheduler.ScheduleExpression.rate(Duration.millis(tick_ms)),
            target=targets.LambdaInvoke(
                function,
                # Each tick says how far apart ticks are, so the handler can pace slower chores.
                input=scheduler.ScheduleTargetInput.from_object({"tickMs": tick_ms}),
                dead_letter_queue=self.dead_letters,
                retry_attempts=constants.CLOCK_RETRY_ATTEMPTS,
                max_event_age=Duration.seconds(constants.CLOCK_MAX_EVENT_AGE_S),
                role=role,
            ),
        )
        return function

    def callback_sender(
        self,
        module: str,
        *,
        handed_over_by: Iterable[lambda_.Function],
        memory_mb: int,
        timeout_s: int,
        concurrency: int,
        description: str = "Callback sender: tries the callbacks handed over",
    ) -> lambda_.Function:
        """`functions/<module>.py`, invoked with batches of its own standard queue's messages:
        the callbacks `handed_over_by`'s functions (the stream's, the clock's) made due, which
        may send to the queue and learn its URL from `EMIT_CALLBACK_QUEUE_URL`. Each message
        is in its space's group, so SQS's fair queues keep one space's backlog from
        delaying another's [SQS developer guide, "Fair queues"].

        Its concurrency is reserved (and its event source runs at most that much), so a
        flood of callbacks to dead targets costs those tries their time and nothing else.
        A message it reports failed (`ReportBatchItemFailures`) is given again after the
        visibility timeout, and after `CALLBACK_MAX_RECEIVES` goes to a dead-letter queue
        of its own, which raises an alarm."""
        dead_letters = self._dead_letter_queue(
            "CallbackDeadLetters",
            "This queue is the callback queue's dead-letter queue: what lands here stays for an operator.",
        )
        self._monitoring.watch_dead_letters(
            dead_letters,
            name="callback-dead-letters",
            title="Callback dead letters",
            description="Callback messages whose attempt could not be made five times (the table "
            "failed, or a message was malformed). Their deliveries are still due, and the clock "
            "hands them over again; see the sender's logs, then purge.",
        )
        queue = sqs.Queue(
            self,
            "Callbacks",
            visibility_timeout=Duration.seconds(constants.CALLBACK_VISIBILITY_TIMEOUT_S),
            retention_period=Duration.hours(constants.CALLBACK_MESSAGE_RETENTION_HOURS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=constants.CALLBACK_MAX_RECEIVES, queue=dead_letters
            ),
        )
        function = self._functions.add(
            module,
            memory_mb=memory_mb,
            timeout_s=timeout_s,
            description=description,
            reserved_concurrency=concurrency,
        )
        function.add_event_source(
            sources.SqsEventSource(
                queue,
                batch_size=constants.CALLBACK_BATCH_SIZE,
                max_concurrency=concurrency,
                report_batch_item_failures=True,
            )
        )
        for sender in handed_over_by:
            queue.grant_send_messages(sender)
            sender.add_environment(Config.env("callback_queue_url").name, queue.queue_url)
        return function
