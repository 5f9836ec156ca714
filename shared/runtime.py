"""Wiring: builds the clients, stores, services and the use cases' context once per process.

Deployed functions build it from their environment; `emit dev` and the tests build
their own (an in-memory DynamoDB, a test clock) and `install` it. The handlers are the
same either way: only this wiring differs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
import httpx
from botocore.config import Config as BotoConfig

from shared.auth import Tokens
from shared.backlog import BacklogWatch
from shared.callbacks import Dispatcher, Outbox
from shared.clock import Clock, SystemClock
from shared.config import Config
from shared.diagnostics import Diagnostics
from shared.ids import IdGenerator
from shared.jobs.context import Context, QueueConfig
from shared.jobs.notify import Notifier
from shared.jobs.schedules import fire_due
from shared.name_metrics import NameMetrics
from shared.outbox import LocalOutbox, SqsOutbox
from shared.policy import Policies
from shared.recount import Recount
from shared.spaces import SpaceSettings
from shared.spread import Spreader
from shared.store.backlog import BacklogStore
from shared.store.blobs import Blobs
from shared.store.books import Slots
from shared.store.deadlines import DeadlineBook
from shared.store.deliveries import DeliveryStore
from shared.store.dynamo import Dynamo
from shared.store.jobs import JobStore
from shared.store.journal import Journal
from shared.store.leases import LeaseBook
from shared.store.listeners import ListenerStore
from shared.store.recounts import RecountStore
from shared.store.schedules import ScheduleStore
from shared.store.secrets import ServiceSecrets
from shared.store.spaces import SpaceStore
from shared.store.spread import SpreadStore
from shared.store.tallies import TallyStore
from shared.store.timers import TimerBook
from shared.store.tokens import TokenStore
from shared.store.watched import WatchedStore
from shared.stream import StreamProcessor
from shared.sweeper import Sweeper
from shared.targets import TargetPolicy
from shared.timers import Timers
from shared.unclaimed import NeverClaimed
from shared.wake import (
    ApiGatewayPoster,
    HeldLater,
    LambdaLater,
    LambdaSender,
    Later,
    Poster,
    Sender,
    Wake,
    management_endpoint,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client


@dataclass
class Runtime:
    clock: Clock
    dynamodb: Any
    s3: Any
    config: Config
    """Every setting (`shared.config`): the table's name, the claims' waits, the books' partitions..."""
    callback_transport: httpx.AsyncBaseTransport | None = None
    """Where callbacks go; None: the network."""
    sqs: Any = None
    """The SQS client of `config.callback_queue_url` (on AWS, where the sender has a queue)."""
    wake_poster: Poster | None = None
    """How a hint reaches a connection (`shared.wake`): API Gateway's management API on
    AWS, `emit dev`'s own server locally; None: hints go nowhere."""
    wake_later: Later | None = None
    wake_sender: Sender | None = None
    """Where hints' posts are made (`shared.wake`); None: in the caller, bounded."""
    """How a hint is put off (`shared.wake`); None: held in this process (`HeldLater`)."""

    @property
    def table(self) -> str:
        return self.config.table

    @property
    def bucket(self) -> str | None:
        return self.config.bucket

    @property
    def queue_config(self) -> QueueConfig:
        return QueueConfig(
            max_wait_ms=self.config.claim_wait_ms,
            poll_ms=self.config.poll_ms,
            poll_max_ms=self.config.poll_max_ms,
            claim_payload_bytes=self.config.claim_payload_bytes,
        )

    def __post_init__(self) -> None:
        self.db = Dynamo(self.dynamodb, self.table)
        self.blobs = Blobs(self.db, self.s3, self.bucket)
        self.space_store = SpaceStore(self.db)
        # The three books file by the clock's tick and share one read of their slot maps a tick.
        slots = Slots(
            self.db, slot_ms=self.config.clock_tick_ms, shards=self.config.book_shards, now=self.clock.now_ms
        )
        self.leases = LeaseBook(self.db, slots)
        timer_book = TimerBook(self.db, slots)
        self.timers = Timers(timer_book, self.clock)
        """Files timed work for the clock (`shared.timers`)."""
        self.policies = Policies(self.space_store, self.clock, self.config.policy_cache_ms)
        watched = WatchedStore(self.db)
        self.settings = SpaceSettings(
            self.space_store,
            self.clock,
            self.config.settings_cache_ms,
            self.timers,
            on_write=self.policies.forget,
            watched=watched,
        )
        self.journal = Journal(self.db)
        self.jobs = JobStore(
            self.db,
            self.blobs,
            self.leases,
            widths=lambda space, name: self.policies.space(space).spread(name).width,
            deadlines=DeadlineBook(self.db, slots),
            timers=timer_book,
        )
        self.deliveries = DeliveryStore(self.db)
        self.tallies = TallyStore(self.db)
        """Every name's and space's counts, kept from the stream (`shared.counts`)."""
        self.recount = Recount(
            clock=self.clock,
            store=RecountStore(self.db),
            spaces=self.space_store,
            timers=self.timers,
            every_ms=self.config.recount_every_ms,
            settle_ms=self.config.recount_settle_ms,
        )
        """Recounts of the stream's counts from the jobs, which heal them (`shared.recount`)."""
        self.backlog = BacklogWatch(BacklogStore(self.db), self.clock)
        """The deployment's claimable backlog, as the clock publishes it (`shared.backlog`)."""
        self.name_metrics = NameMetrics(
            clock=self.clock,
            watched=watched,
            settings=self.settings,
            tallies=self.tallies,
            backlog=self.backlog,
        )
        """The metrics of the names spaces list, as the clock publishes them."""
        self.targets = TargetPolicy(allow_private=self.config.allow_private_callbacks)
        self.context = Context(
            clock=self.clock,
            jobs=self.jobs,
            spaces=self.space_store,
            settings=self.settings,
            policies=self.policies,
            journal=self.journal,
            deliveries=self.deliveries,
            secrets=ServiceSecrets(self.db),
            targets=self.targets,
            config=self.queue_config,
            spreader=Spreader(SpreadStore(self.db), self.timers),
            timers=self.timers,
            schedules=ScheduleStore(self.db),
            ids=IdGenerator(),
        )
        """What the use cases (`shared.jobs`) work with; handlers pass it to them."""
        self.diagnostics = Diagnostics(
            clock=self.clock, jobs=self.jobs, spaces=self.space_store, tallies=self.tallies
        )
        self.tokens = Tokens(TokenStore(self.db), self.clock, self.config.dev_token)
        self.dispatcher = Dispatcher(
            clock=self.clock,
            jobs=self.jobs,
            deliveries=self.deliveries,
            settings=self.settings,
            policy=self.targets,
            transport=self.callback_transport,
            timers=self.timers,
        )
        self.outbox: Outbox = (
            SqsOutbox(self.sqs, self.config.callback_queue_url)
            if self.config.callback_queue_url
            else LocalOutbox()
        )
        self.wake = Wake(
            clock=self.clock,
            store=ListenerStore(self.db),
            tokens=self.tokens,
            url=self.config.wake_url,
            poster=self.wake_poster,
            later=self.wake_later if self.wake_later is not None else HeldLater(),
            sender=self.wake_sender,
        )
        """Connections, listens and hints (`shared.wake`); the clock calls `wake.hint`."""
        self.sweeper = Sweeper(
            clock=self.clock,
            jobs=self.jobs,
            spaces=self.space_store,
            settings=self.settings,
            policies=self.policies,
            leases=self.leases,
            deliveries=self.deliveries,
            outbox=self.outbox,
            spreader=self.context.spreader,
            timers=self.timers,
            never_claimed=NeverClaimed(
                clock=self.clock,
                jobs=self.jobs,
                settings=self.settings,
                policies=self.policies,
                timers=self.timers,
                every_ms=self.config.unclaimed_every_ms,
            ),
            wake=self.wake,
            schedules=lambda space, schedule_id, now: fire_due(self.context, space, schedule_id, now),
            recount=self.recount,
        )
        self.policies.on_write = lambda space, name, policy, seen_by_ms: self.wake.policy_written(
            space, name, paused=policy.paused, seen_by_ms=seen_by_ms
        )
        """A name's policy written (resumed, given room) hints it once claims see it."""
        self.stream = StreamProcessor(
            clock=self.clock,
            jobs=self.jobs,
            deliveries=self.deliveries,
            outbox=self.outbox,
            spaces=self.space_store,
            settings=self.settings,
            timers=self.timers,
            unclaimed_every_ms=self.config.unclaimed_every_ms,
            tick_ms=self.config.clock_tick_ms,
            notifier=Notifier(self.context),
            wake=self.wake,
            tallies=self.tallies,
            recount=self.recount,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Runtime:
        """A deployed function's runtime: its settings from `env` (the process's environment)."""
        config = Config.from_env(os.environ if env is None else env)
        client = BotoConfig(retries={"mode": "standard", "max_attempts": 5}, tcp_keepalive=True)
        dynamodb: DynamoDBClient = boto3.client(
            "dynamodb", endpoint_url=config.dynamodb_endpoint, config=client
        )
        s3: S3Client = boto3.client("s3", endpoint_url=config.s3_endpoint, config=client)
        return cls(
            clock=SystemClock(),
            dynamodb=dynamodb,
            s3=s3,
            config=config,
            sqs=boto3.client("sqs", config=client) if config.callback_queue_url else None,
            **_wake_wiring(config),
        )


def _wake_wiring(config: Config) -> dict[str, Any]:
    """A deployed function's wake clients: posts to the WebSocket API's connections (short
    timeouts, no retries: a hint that fails is dropped), hints put off through Lambda."""
    wiring: dict[str, Any] = {}
    quick = BotoConfig(connect_timeout=1, read_timeout=2, retries={"mode": "standard", "max_attempts": 1})
    if config.wake_url:
        endpoint = management_endpoint(config.wake_url)
        wiring["wake_poster"] = ApiGatewayPoster(
            lambda: boto3.client("apigatewaymanagementapi", endpoint_url=endpoint, config=quick)
        )
    if config.wake_later_function:
        invoker = boto3.client("lambda", config=quick)
        wiring["wake_later"] = LambdaLater(invoker, config.wake_later_function)
        wiring["wake_sender"] = LambdaSender(invoker, config.wake_later_function)
    return wiring


_current: Runtime | None = None
_lock = threading.Lock()


def runtime() -> Runtime:
    """The process's runtime, built from the environment on first use."""
    global _current  # noqa: PLW0603 - one runtime per process is the point: warm Lambdas reuse it
    if _current is None:
        with _lock:
            if _current is None:
                _current = Runtime.from_env()
    return _current


def install(value: Runtime | None) -> None:
    """Use `value` from now on (tests, `emit dev`); None forgets it."""
    global _current  # noqa: PLW0603
    _current = value
