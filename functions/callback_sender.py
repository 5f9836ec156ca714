"""Callbacks the stream and the clock handed over (`shared.outbox`): on AWS an SQS queue's
messages, in `emit dev` its sender threads' batches; each message one delivery to try.

The batch's sends run side by side, each over within 10 s. A message whose attempt could
not be made or recorded (a body that is not a message, the table failing) is reported
with Powertools' batch processor, so SQS gives it again after its visibility timeout and,
after a few, moves it to the dead-letter queue. A target that fails is no such failure:
the delivery records it, and the clock tries it again.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from shared import outbox
from shared.observability import logger, metrics, tracer
from shared.runtime import runtime


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    records = event.get("Records") or []
    outcomes = dict(
        zip(
            (record["messageId"] for record in records),
            outbox.send(runtime().dispatcher, [record["body"] for record in records]),
            strict=True,
        )
    )

    def check(record: SQSRecord) -> None:
        outcome = outcomes[record.message_id]
        if isinstance(outcome, BaseException):
            raise outcome
        metrics.add_metric(f"Callbacks{outcome.title().replace('_', '')}", MetricUnit.Count, 1)

    # A processor per invocation: emit dev runs several batches at once, on threads.
    processor = BatchProcessor(event_type=EventType.SQS)
    return dict(
        process_partial_response(event=event, record_handler=check, processor=processor, context=context)
    )
