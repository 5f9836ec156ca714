"""The table's stream: a callback when a job finishes; cleanup when retention removes one.

A batch is counted whole first (`shared.counts`); then its records' effects are applied
one by one with Powertools' batch processor, which reports the first failed record so
Lambda retries from there (then the dead-letter queue), with a mark that the rest is
counted; the callbacks made due are then handed to their sender
(`functions/callback_sender.py`), never sent here.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from shared.callbacks import Due
from shared.observability import logger, metrics, tracer
from shared.runtime import runtime

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    stream = runtime().stream
    runtime().wake.new_batch()  # issue 19: what wake learns of listeners holds for this batch only
    records: list[dict[str, Any]] = event["Records"]
    # Each record parsed once; counted first, whole: a record whose effects keep failing
    # still counts, once.
    reads = {_sequence(r): stream.read(r) for r in records}
    counted = [read.counted for read in reads.values()]
    tally = stream.count(counted)
    due: list[Due] = []

    def apply(record: DynamoDBRecord) -> None:
        found = stream.effects(reads[_sequence(record.raw_event)])
        if found is not None:
            due.append(found)

    answer = process_partial_response(event=event, record_handler=apply, processor=processor, context=context)
    stream.deliver(due)
    failed = {str(f["itemIdentifier"]) for f in answer.get("batchItemFailures", [])}
    first = next((i for i, r in enumerate(records) if _sequence(r) in failed), None)
    if first is not None:
        stream.retried_from(counted, counted[first].record_id)
    # Each record once (the counts' marks): a job's end is counted here, its create and
    # claim by the requests that made them. Only what happened: a metric is billed by the hour.
    for metric, n in (
        ("JobsCompleted", tally.completed),
        ("JobsFailed", tally.failed),
        ("JobsCancelled", tally.cancelled),
    ):
        if n:
            metrics.add_metric(metric, MetricUnit.Count, n)
    return dict(answer)


def _sequence(record: dict[str, Any]) -> str:
    return str(record["dynamodb"]["SequenceNumber"])
