"""What each function does to the table and the bucket, and the IAM statements allowing just that.

Each entry lists the DynamoDB and S3 calls its function's code path makes through
`shared/` (`tests/infra/test_access.py` drives every endpoint under moto, records the
calls, and checks they match these entries exactly), so a function holds no action it
never uses. Transactions need no action of their own: each `Put` inside a
TransactWriteItems is authorized as a PutItem [DynamoDB developer guide,
"Using IAM with DynamoDB transactions"].

Two conditions on the partition key (`dynamodb:LeadingKeys`) fence the token items, the
one place a write could grant power: token functions touch nothing but token items, and
every other function may read a token (to authenticate its caller) but never write one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3

from shared.store import keys
from shared.store.blobs import s3_key

TOKEN_PARTITION = keys.token("-")["pk"]
"""The partition key of every token item (and of nothing else)."""

READ_ACTIONS = frozenset({"GetItem", "BatchGetItem", "Query"})
WRITE_ACTIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "ConditionCheckItem"})


@dataclass(frozen=True)
class Access:
    """One function's use of the data: DynamoDB actions (without the `dynamodb:` prefix)
    on the table and on the ready index, and the S3 values
    (payload, result, error) it reads, writes and deletes."""

    table: frozenset[str]
    index: frozenset[str] = frozenset()
    gets: frozenset[str] = frozenset()
    puts: frozenset[str] = frozenset()
    deletes: frozenset[str] = frozenset()
    tokens_only: bool = False
    """Every item it touches is a token item."""

    def __post_init__(self) -> None:
        unknown = (self.table | self.index) - READ_ACTIONS - WRITE_ACTIONS
        if unknown:
            raise ValueError(f"not an item-level DynamoDB action: {sorted(unknown)}")

    @property
    def reads(self) -> frozenset[str]:
        return self.table & READ_ACTIONS

    @property
    def writes(self) -> frozenset[str]:
        return self.table & WRITE_ACTIONS


def _set(*names: str) -> frozenset[str]:
    return frozenset(names)


# Every endpoint authenticates its caller first: a GetItem of the token item.
ACCESS: Mapping[str, Access] = {
    # Settings and a key holder's job (GetItem), the names' policies (Query of the space's
    # own partition), the in-flight count's reservation (UpdateItem), jobs and side items in
    # batches, keyed jobs as a two-Put transaction and new job names (PutItem), under a cap
    # jobs in transactions with the count (PutItem, UpdateItem); payloads too large for
    # DynamoDB go to S3.
    "create_jobs": Access(
        _set("GetItem", "Query", "PutItem", "UpdateItem", "BatchWriteItem"), puts=_set("payload")
    ),
    # The space's job partitions newest first (Query).
    "list_jobs": Access(_set("GetItem", "Query")),
    # The job, then its payload and result from side items or S3 (errors are at most
    # 4 KiB and never reach S3); for a pending job, its name's policy (Query).
    "get_job": Access(_set("GetItem", "BatchGetItem", "Query"), gets=_set("payload", "result")),
    "list_lines": Access(_set("GetItem", "Query")),
    "list_events": Access(_set("GetItem", "Query")),
    # Job names (Query), candidates from the ready index, the lease bucket (PutItem),
    # one conditional UpdateItem per claim, then the payloads; for a name with limits, its
    # slot items (BatchGetItem), its rate (GetItem, UpdateItem), and each claim with its
    # slot as one transaction (UpdateItem), read back (GetItem).
    "claim_jobs": Access(
        _set("GetItem", "Query", "PutItem", "UpdateItem", "BatchGetItem"),
        index=_set("Query"),
        gets=_set("payload"),
    ),
    # Settings and the job (GetItem), the name's policy for a job put back (Query), the
    # transition (UpdateItem), results and error side items and log-line pages
    # (BatchWriteItem), events (PutItem), large results to S3.
    "report_jobs": Access(
        _set("GetItem", "Query", "PutItem", "UpdateItem", "BatchWriteItem"), puts=_set("result")
    ),
    "cancel_jobs": Access(_set("GetItem", "UpdateItem")),
    # The old jobs, their retry marks and side-item payloads (BatchGetItem), settings
    # (GetItem) and the names' policies (Query); then the create path: each new job with its
    # mark as one transaction (PutItem), under a cap with the count (UpdateItem). Payloads
    # in S3 are read from the old job and written for the new one.
    "retry_jobs": Access(
        _set("GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem"),
        gets=_set("payload"),
        puts=_set("payload"),
    ),
    # The job (GetItem), and the service's secret for follow links: read, or made by the
    # first link ever (PutItem, conditional, never over an item that exists).
    "create_follow_link": Access(_set("GetItem", "PutItem")),
    # No token: the secret and the job (GetItem), a page of lines (Query), a completed job's
    # result from a side item or S3, a failed one's error from a side item (BatchGetItem).
    "follow_job": Access(_set("GetItem", "Query", "BatchGetItem"), gets=_set("result")),
    # The spaces' listing (Query), or a limited token's own entries, then each listed space's
    # settings and in-flight count (BatchGetItem).
    "list_spaces": Access(_set("GetItem", "Query", "BatchGetItem")),
    "get_space": Access(_set("GetItem", "Query")),
    # The space's default and the name's own policy (GetItem).
    "get_name_policy": Access(_set("GetItem")),
    # The name listed with its space if new (a two-Put transaction), its policy map set
    # field by field (UpdateItem), then read back (GetItem).
    "update_name_policy": Access(_set("GetItem", "PutItem", "UpdateItem")),
    "reset_name_policy": Access(_set("GetItem", "PutItem", "UpdateItem")),
    # The space's own partition (Query), each name's ready partitions (the index), the slot
    # and rate items of a name with limits (BatchGetItem).
    "get_diagnostics": Access(_set("GetItem", "Query", "BatchGetItem"), index=_set("Query")),
    # The space (Query of its partition), its names' counts (BatchGetItem), each name's
    # minutes (Query).
    "get_metrics": Access(_set("GetItem", "Query", "BatchGetItem")),
    # The settings (GetItem, UpdateItem), the space's listing for the clock (PutItem),
    # then the space as GET answers it (Query, GetItem).
    "update_space": Access(_set("GetItem", "Query", "UpdateItem", "PutItem")),
    # Schedules (shared/jobs/schedules.py), each an item of its own. A page: the space's
    # listing (Query), then its schedules (BatchGetItem).
    "list_schedules": Access(_set("GetItem", "Query", "BatchGetItem")),
    "get_schedule": Access(_set("GetItem")),
    # The schedule (GetItem), listed when new and written on its version (PutItem), its
    # next time filed in the timer book (PutItem, and the slot's mark: UpdateItem).
    "put_schedule": Access(_set("GetItem", "PutItem", "UpdateItem")),
    "update_schedule": Access(_set("GetItem", "PutItem", "UpdateItem")),
    # The schedule on its version, then its listing entry (DeleteItem).
    "delete_schedule": Access(_set("GetItem", "DeleteItem")),
    # One job through the create path (its payload at most 16 KiB: never S3), then the
    # schedule's last run on its version (PutItem).
    "trigger_schedule": Access(_set("GetItem", "Query", "PutItem", "UpdateItem", "BatchWriteItem")),
    "create_token": Access(_set("GetItem", "PutItem"), tokens_only=True),
    "list_tokens": Access(_set("GetItem", "Query"), tokens_only=True),
    "revoke_token": Access(_set("GetItem", "DeleteItem"), tokens_only=True),
    # The dashboard's files come with its functions: no token to check, no data at all.
    "get_dashboard": Access(_set()),
    "get_dashboard_file": Access(_set()),
    # The OpenAPI document is built from the code: no token to check, no data at all.
    "get_openapi": Access(_set()),
    # A job finished with a callback: the delivery item (PutItem), the job's mark cleared
    # (UpdateItem); the sender is handed it (SQS, granted by the stack with the queue).
    # A job removed by retention: its lines, events and side items (Query, BatchWriteItem),
    # S3 objects; its key keeps the finish time and its delivery a tombstone (UpdateItem).
    # A notice (`shared.notify`): a job made through the create path, put on condition that
    # its id is new (PutItem), its payload in S3 when large (a notice carries a result).
    "stream_handler": Access(
        _set("GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "BatchWriteItem"),
        gets=_set("result"),
        puts=_set("payload"),
        deletes=_set("payload", "result"),
    ),
    # The books' slot maps and due buckets (Query), the jobs they list (BatchGetItem,
    # GetItem), expiries and never-claimed failures (UpdateItem), a name's ready jobs (index
    # Query), renewed leases and timers filed again (PutItem, and a slot's mark: UpdateItem),
    # done buckets (BatchWriteItem); a delivery (GetItem), one the stream never recorded
    # (PutItem), handed to the sender (SQS, granted by the stack with the queue); a hint: the
    # name's listeners (Query), its last-hinted item (UpdateItem).
    "clock_handler": Access(
        # DeleteItem: a drained slot's map of the books, on the condition that no filing marked it since.
        _set("GetItem", "BatchGetItem", "Query", "PutItem", "UpdateItem", "BatchWriteItem", "DeleteItem"),
        index=_set("Query"),
    ),
    # Wake (shared.wake). $connect: the token (GetItem), the connection's record (PutItem).
    "wake_connect": Access(_set("GetItem", "PutItem")),
    # listen: the connection and its token (GetItem), its listens listed on it (UpdateItem),
    # a listen item per name (BatchWriteItem).
    "wake_listen": Access(_set("GetItem", "UpdateItem", "BatchWriteItem")),
    # $disconnect: the connection (GetItem), it and its listen items removed (BatchWriteItem).
    "wake_disconnect": Access(_set("GetItem", "BatchWriteItem")),
    # A hint put off: the name's listeners (Query), its last-hinted item (UpdateItem), and a
    # gone connection's records removed (GetItem, BatchWriteItem).
    "wake_later": Access(_set("GetItem", "Query", "UpdateItem", "BatchWriteItem")),
    # A delivery handed over: its attempt's hold and result (UpdateItem), the job when the
    # message does not carry it, its values and the space's secret (GetItem, BatchGetItem, S3);
    # a try put off, filed in the timer book (PutItem, and its slot's mark: UpdateItem).
    "callback_sender": Access(_set("GetItem", "BatchGetItem", "PutItem", "UpdateItem"), gets=_set("result")),
}


def _actions(names: frozenset[str]) -> list[str]:
    return [f"dynamodb:{name}" for name in sorted(names)]


def statements(
    access: Access, *, table_arn: str, index_arn: str, bucket: s3.IBucket
) -> list[iam.PolicyStatement]:
    """The IAM statements that allow `access` and nothing more."""
    out: list[iam.PolicyStatement] = []
    if access.tokens_only:
        out.append(
            iam.PolicyStatement(
                sid="TokenItemsOnly",
                actions=_actions(access.table),
                resources=[table_arn],
                conditions={"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [TOKEN_PARTITION]}},
            )
        )
    else:
        if access.reads:
            out.append(
                iam.PolicyStatement(sid="ReadItems", actions=_actions(access.reads), resources=[table_arn])
            )
        if access.writes:
            out.append(
                iam.PolicyStatement(
                    sid="WriteItemsButTokens",
                    actions=_actions(access.writes),
                    resources=[table_arn],
                    conditions={"ForAllValues:StringNotEquals": {"dynamodb:LeadingKeys": [TOKEN_PARTITION]}},
                )
            )
    if access.index:
        out.append(
            iam.PolicyStatement(sid="ReadyIndex", actions=_actions(access.index), resources=[index_arn])
        )
    for sid, action, names in (
        ("ReadValues", "s3:GetObject", access.gets),
        ("WriteValues", "s3:PutObject", access.puts),
        ("DeleteValues", "s3:DeleteObject", access.deletes),
    ):
        if names:
            # `result-<attempt>`: results and errors are kept under the attempt that wrote them.
            objects = [bucket.arn_for_objects(f"{s3_key('*', '*', name)}*") for name in sorted(names)]
            out.append(iam.PolicyStatement(sid=sid, actions=[action], resources=objects))
    return out
