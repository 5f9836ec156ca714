"""Wiring: builds the clients, stores, services and the use cases' context once per process.

Deployed functions build it from their environment; `emit dev` and the tests build
their own (an in-memory DynamoDB, a test clock) and `install` it. The handlers are the
same either way: only this wiring differs.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
import httpx
from botocore.config import Config

from shared.auth import Tokens
from shared.callbacks import Dispatcher
from shared.clock import Clock, SystemClock
from shared.diagnostics import Diagnostics
from shared.ids import IdGenerator
from shared.jobs.context import Context, QueueConfig
from shared.jobs.notify import Notifier
from shared.policy import Policies
from shared.spaces import SpaceSettings
from shared.spread import Spreader
from shared.store import keys
from shared.store.blobs import Blobs
from shared.store.deadlines import DeadlineBook
from shared.store.deliveries import DeliveryStore
from shared.store.dynamo import Dynamo
from shared.store.jobs import JobStore
from shared.store.journal import Journal
from shared.store.leases import LeaseBook
from shared.store.secrets import ServiceSecrets
from shared.store.spaces import SpaceStore
from shared.store.spread import SpreadStore
from shared.store.tokens import TokenStore
from shared.stream import StreamProcessor
from shared.sweeper import Sweeper
from shared.targets import TargetPolicy

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client


@dataclass
class Runtime:
    clock: Clock
    dynamodb: Any
    s3: Any
    table: str
    bucket: str | None
    queue_config: QueueConfig = field(default_factory=QueueConfig)
    settings_cache_ms: int = 2_000
    policy_cache_ms: int = 1_000
    """At most a second: a policy change applies to every claim that follows within it."""
    dev_token: str | None = None
    allow_private_callbacks: bool = False
    unclaimed_every_ms: int = 600_000
    callback_transport: httpx.AsyncBaseTransport | None = None
    """Where callbacks go; None: the network."""
    book_shards: int = keys.BOOK_SHARDS
    """The partitions of the lease and deadline books (`keys.BOOK_SHARDS`; fewer locally,
    where the clock ticks every second)."""

    def __post_init__(self) -> None:
        self.db = Dynamo(self.dynamodb, self.table)
        self.blobs = Blobs(self.db, self.s3, self.bucket)
        self.space_store = SpaceStore(self.db)
        self.policies = Policies(self.space_store, self.clock, self.policy_cache_ms)
        self.settings = SpaceSettings(
            self.space_store, self.clock, self.settings_cache_ms, on_write=self.policies.forget
        )
        self.journal = Journal(self.db)
        self.leases = LeaseBook(self.db, self.book_shards)
        self.jobs = JobStore(
            self.db,
            self.blobs,
            self.leases,
            widths=lambda space, name: self.policies.space(space).spread(name).width,
            deadlines=DeadlineBook(self.db, self.book_shards),
        )
        self.deliveries = DeliveryStore(self.db)
        self.targets = TargetPolicy(allow_private=self.allow_private_callbacks)
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
            spreader=Spreader(SpreadStore(self.db)),
            ids=IdGenerator(),
        )
        """What the use cases (`shared.jobs`) work with; handlers pass it to them."""
        self.diagnostics = Diagnostics(clock=self.clock, jobs=self.jobs, spaces=self.space_store)
        self.tokens = Tokens(TokenStore(self.db), self.clock, self.dev_token)
        self.dispatcher = Dispatcher(
            clock=self.clock,
            jobs=self.jobs,
            deliveries=self.deliveries,
            settings=self.settings,
            policy=self.targets,
            transport=self.callback_transport,
        )
        self.sweeper = Sweeper(
            clock=self.clock,
            jobs=self.jobs,
            spaces=self.space_store,
            settings=self.settings,
            policies=self.policies,
            leases=self.leases,
            dispatcher=self.dispatcher,
            unclaimed_every_ms=self.unclaimed_every_ms,
        )
        self.stream = StreamProcessor(
            clock=self.clock,
            jobs=self.jobs,
            deliveries=self.deliveries,
            dispatcher=self.dispatcher,
            spaces=self.space_store,
            notifier=Notifier(self.context),
        )

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Runtime:
        env = dict(os.environ if env is None else env)
        config = Config(retries={"mode": "standard", "max_attempts": 5}, tcp_keepalive=True)
        dynamodb: DynamoDBClient = boto3.client(
            "dynamodb", endpoint_url=env.get("EMIT_DYNAMODB_ENDPOINT") or None, config=config
        )
        s3: S3Client = boto3.client("s3", endpoint_url=env.get("EMIT_S3_ENDPOINT") or None, config=config)
        return cls(
            clock=SystemClock(),
            dynamodb=dynamodb,
            s3=s3,
            table=env["EMIT_TABLE"],
            bucket=env.get("EMIT_BUCKET"),
            queue_config=QueueConfig(
                max_wait_ms=int(env.get("EMIT_MAX_WAIT_MS", "25000")),
                poll_ms=int(env.get("EMIT_POLL_MS", "250")),
                poll_max_ms=int(env.get("EMIT_POLL_MAX_MS", "1000")),
                # 6 MB less JSON overhead: the answer must fit a Lambda response.
                claim_payload_bytes=int(env.get("EMIT_CLAIM_PAYLOAD_BYTES", str(5 * 1024 * 1024))),
            ),
            settings_cache_ms=int(env.get("EMIT_SETTINGS_CACHE_MS", "2000")),
            dev_token=env.get("EMIT_DEV_TOKEN") or None,
            allow_private_callbacks=env.get("EMIT_ALLOW_PRIVATE_CALLBACKS") == "true",
            unclaimed_every_ms=int(env.get("EMIT_UNCLAIMED_EVERY_MS", "600000")),
        )


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
