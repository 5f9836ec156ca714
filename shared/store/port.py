"""The job store as the use cases see it: a `Protocol` over domain values, never items.

What crosses the port is `shared.job`'s `Job`, `shared.machine`'s `Transition` and the
values below: a refused transition is a `JobConflict` carrying the job as it stood, an
idempotency key's holder is a `KeyHolder`, and a new job's payload goes in as bytes, packed by the store
(`NewRecord.packing`). The values live with the store's others (`shared.store.jobs.records`);
`shared.store.jobs.JobStore` is the one implementation (checked against `JobStorePort`
by mypy in `shared.store.jobs`).

Outside `shared/store/` this module is the only one of the store anything imports (the
import-linter contract `store-behind-port`); the runtime's wiring (`shared.runtime`)
alone builds the concrete stores. Each other store the use cases hold has its port here
too (spaces, deliveries, journal, tokens, secrets, spreads), each checked against its one
implementation by mypy at the end of this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from shared.job import Job, JobStatus
from shared.machine import Transition
from shared.store.backlog import Place as BacklogPlace
from shared.store.blobs import Packed
from shared.store.books import Bucket, E, Look
from shared.store.counters import Owner
from shared.store.deadlines import DeadlineEntry
from shared.store.deliveries import Attempt, DeliveryState
from shared.store.images import JobChange, Snapshot
from shared.store.jobs import Reservation
from shared.store.jobs.pages import JobPage, Watched
from shared.store.jobs.records import (
    Census,
    ClaimPlan,
    ClaimResult,
    Inserted,
    JobConflict,
    KeyHolder,
    NameClaim,
    NewRecord,
    ReportExtras,
    RetryOf,
    Waiting,
)
from shared.store.journal import Event, Line
from shared.store.keys import DEPLOYMENT, name_scope
from shared.store.leases import LeaseEntry
from shared.store.listeners import Connection, ConnectionGone
from shared.store.policies import Policy, Rate, SpacePolicies
from shared.store.recounts import Proposal, Survey
from shared.store.schedules import LastRun, Overlap, Schedule, ScheduleConflict
from shared.store.settings import Destination, Kind, Settings
from shared.store.spaces import SpaceState
from shared.store.spread import Spread
from shared.store.tallies import Counted, Gauges, Minute, Tally
from shared.store.timers import CALLBACK, HEAL, HINT, NARROW, RECOUNT, SCHEDULE, UNCLAIMED, Timer
from shared.store.tokens import TokenRecord


class JobStorePort(Protocol):
    """What the use cases ask of the job store, in domain values."""

    def job(self, space: str, job_id: str, *, now_ms: int, bodies: bool = False) -> Job | None:
        """The job, with its payload, result and error if `bodies`; None: there is none, or
        it is past its retention at `now_ms`."""
        ...

    def holder(self, space: str, key: str) -> KeyHolder | None:
        """Who holds the idempotency key `key`, if anyone (released or not)."""
        ...

    def retries(self, space: str, job_ids: list[str]) -> dict[str, str]:
        """The jobs already made by retrying each of `job_ids` (old id -> new id)."""
        ...

    def insert(
        self,
        space: str,
        records: list[NewRecord],
        *,
        key_released: Callable[[KeyHolder], bool],
        reservation: Reservation | None = None,
        per_key: Mapping[str, int | None] | None = None,
    ) -> list[Inserted]:
        """Store new jobs, each with its idempotency key (taken in the same write, so two
        racing creates with one key make one job; `key_released` says whether a key's
        holder has let it go), within `reservation` on the space's count, and under
        `per_key` caps on keys' pending jobs. One outcome per record, in order."""
        ...

    def transition(
        self,
        space: str,
        job_id: str,
        transition: Transition,
        *,
        value: Packed | None = None,
        extras: ReportExtras | None = None,
        place: Packed | None = None,
        held: Job | None = None,
        owner: Owner | None = None,
    ) -> Job:
        """Apply `transition` as one conditional write (with its counters where it takes or
        lets go of a hold); the job after it, without bodies. Raises JobConflict."""
        ...

    def pack(self, space: str, job_id: str, name: str, raw: bytes, *, attempt: int | None = None) -> Packed:
        """A result or an error, packed where it fits (`Packed.ref`: outside the job item)."""
        ...

    def census(self, space: str, name: str, now_ms: int, cap: int, *, reach: int = ...) -> Census:
        """The pending jobs of `name`, by where they stand, up to `cap`."""
        ...

    # reports:
    def keep_values(self, values: list[Packed]) -> None:
        """Write the packed values that live outside the job item (`Packed.ref`), before
        the transition that names them."""
        ...

    def discard_values(self, space: str, job_id: str, values: list[Packed]) -> None:
        """Remove values kept for a transition that was refused."""
        ...

    # claim:
    def claim(self, space: str, plan: ClaimPlan, *, now_ms: int) -> ClaimResult:
        """Hand out up to `plan.count` jobs of its names in order of hand-out, each won by a
        conditional write (under its name's limits, each job taking its slots): the jobs
        claimed with their payloads, and those found past their deadline or with a payload
        no claim can read, which the caller settles."""
        ...

    # reads: a page of jobs, a followed job, where a name's counted limits stand
    def jobs_page(
        self,
        space: str,
        *,
        before: str | None,
        limit: int,
        status: JobStatus | None,
        name: str | None,
        now_ms: int,
    ) -> JobPage:
        """Up to `limit` jobs newest first, ids below `before`, filtered by `status` and
        `name` if given, without bodies; with the cursor of the next page."""
        ...

    def watched(self, space: str, job_id: str, *, now_ms: int, seen: str | None = None) -> Watched | None:
        """The job as its follower sees it, with a version that changes whenever what it is
        shown does; a finished job with its result or error unless its version is `seen`.
        None: there is none, or it is past its retention."""
        ...

    def running(self, space: str, name: str) -> int:
        """The name's jobs running now, by its slots (kept under a `concurrency` only)."""
        ...

    def rate_until(self, space: str, name: str, *, tokens: int, interval_ms: int, now_ms: int) -> int | None:
        """When the name's rate next allows a hand-out, if it allows none now."""
        ...

    def key_running(self, space: str, name: str, key: str) -> int:
        """The jobs of the name's concurrency key running now."""
        ...

    def key_rate_until(
        self, space: str, name: str, key: str, *, tokens: int, interval_ms: int, now_ms: int
    ) -> int | None:
        """When the key's `perKeyRate` next allows a hand-out, if it allows none now."""
        ...

    # clock: the clock's drains and looks, the stream's records, the callback sender
    def found(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Job]:
        """The jobs of `job_ids` there are, by id, without bodies (past retention or not)."""
        ...

    def snapshot(self, space: str, job_id: str) -> Snapshot | None:
        """The job as its item stands now (strongly consistent), its bodies left to read."""
        ...

    def snapshots(self, space: str, job_ids: list[str], *, consistent: bool) -> dict[str, Snapshot]:
        """The jobs of `job_ids` there are, by id, as snapshots."""
        ...

    def outcome(self, seen: Snapshot) -> Job:
        """The job of `seen` with its result and error, not its payload."""
        ...

    def payloads(self, space: str, seen: list[Snapshot]) -> list[bytes | None]:
        """The stored payload of each job of `seen`, in one batched read."""
        ...

    def forget_removed(self, removed: Snapshot) -> None:
        """Delete what a job retention removed left behind (lines, events, values, its key's hold)."""
        ...

    def unclaimed(
        self, space: str, name: str, ready_by_ms: int, aging_ms: int, limit: int, *, reach: int = ...
    ) -> list[Waiting]:
        """Pending jobs of `name` claimable since `ready_by_ms` or earlier, up to `limit`."""
        ...

    @property
    def deadlines(self) -> BookPort[DeadlineEntry]:
        """The deadline book: jobs to cancel when their deadlines pass."""
        ...


class BookPort(Protocol[E]):
    """A book of what to look at when a time comes (`shared.store.books`): the lease book,
    the deadline book, the timer book."""

    def look(self, now_ms: int) -> Look:
        """The partitions a tick at `now_ms` drains, from its slots' maps."""
        ...

    def drained(self, look: Look, partitions: list[str]) -> None:
        """`partitions` of `look` were drained to the end: settled slots' maps may go."""
        ...

    def due(self, partition: str, now_ms: int) -> tuple[list[Bucket[E]], bool]:
        """The partition's due buckets, oldest first, a page of them; and whether more may be due."""
        ...

    def remove(self, buckets: list[Bucket[E]]) -> None: ...

    def record(self, space: str, rows: list[tuple[Any, ...]]) -> None:
        """File the entries made of `rows` in one bucket, due at the earliest of them."""
        ...


class DeliveryStorePort(Protocol):
    """Callbacks' deliveries (`shared.store.deliveries`): one a finished job with a callback."""

    def start(self, space: str, job_id: str, now_ms: int) -> bool:
        """Record the delivery due now; whether it is pending (False: over, or its job removed)."""
        ...

    def take(self, space: str, job_id: str, now_ms: int, hold_ms: int) -> Attempt | None:
        """Hold the next attempt for one sender (None: not due, or held by another)."""
        ...

    def record(
        self,
        space: str,
        job_id: str,
        *,
        attempt: int,
        state: str,
        next_at_ms: int | None,
        status: int | None,
        error: str | None,
        now_ms: int,
    ) -> None:
        """Write one attempt's result; only the sender holding that attempt may."""
        ...

    def state(self, space: str, job_id: str) -> DeliveryState | None:
        """Where the delivery stands, as `GET /jobs/{id}` shows it (None: no record of it yet)."""
        ...

    def bury(self, space: str, job_id: str, now_ms: int) -> None:
        """The job is gone: a tombstone in place of its delivery."""
        ...


class SpaceListing(Protocol):
    """The spaces listed (`shared.store.spaces`), as `GET /v1/spaces` pages them."""

    def listed_after(self, after: str | None, limit: int) -> tuple[list[str], bool]:
        """Up to `limit` spaces in name order after `after`, and whether more follow."""
        ...

    def listed_among(self, spaces: frozenset[str]) -> set[str]:
        """Those of `spaces` that exist."""
        ...

    def in_flight_of(self, spaces: list[str]) -> dict[str, int]:
        """Each space's unfinished jobs: its `maxInFlight` count under a cap, else the stream's."""
        ...


# -- the stores beside the job store (spaces, tokens, journal, secrets, spreads): each
# port is what its callers ask, in values; the concrete stores are checked at the end.


class SpaceStorePort(Protocol):
    """What the use cases ask of a space's own items: its settings, its names and their
    policies, the listings the clock reads, and its `maxInFlight` count's reservations."""

    def read_settings(self, space: str) -> Settings:
        """The space's settings, read now (the defaults where it has set none)."""
        ...

    def patch_settings(self, space: str, changes: Mapping[str, Any], now_ms: int) -> None:
        """Set the settings fields a PATCH sent, in the API's spelling (None: back to the
        default, or off); creates the space if new."""
        ...

    def space(self, space: str) -> SpaceState | None:
        """The space's settings, in-flight count, names and policies in one read; None: no
        such space."""
        ...

    def policies(self, space: str) -> SpacePolicies:
        """The policies of the space and of every name (with spreads and defaults), in one read."""
        ...

    def name_policies(self, space: str, name: str) -> SpacePolicies:
        """The space's default policy and `name`'s own, read afresh."""
        ...

    def write_policy(
        self, space: str, name: str | None, fields: Mapping[str, Any] | None, now_ms: int
    ) -> None:
        """Set policy fields of the space's default (`name` None) or of a listed name; None
        `fields` clears them all."""
        ...

    def write_job_defaults(self, space: str, name: str, fields: Mapping[str, Any] | None) -> None:
        """Set (None values: remove) a listed name's `jobDefaults` fields; None clears them all."""
        ...

    def names(self, space: str) -> list[str]:
        """The job names listed in the space."""
        ...

    def register_names(self, space: str, names: set[str], now_ms: int) -> None:
        """List new job names (each with its space)."""
        ...

    def listed_after(self, after: str | None, limit: int) -> tuple[list[str], bool]:
        """Up to `limit` spaces in name order after `after`, and whether more follow."""
        ...

    def listed_among(self, spaces: frozenset[str]) -> set[str]:
        """Those of `spaces` that exist."""
        ...

    def unfinished(self, space: str) -> int:
        """The space's unfinished jobs from the stream's counts (a space without a cap)."""
        ...

    def in_flight_of(self, spaces: list[str]) -> dict[str, int]:
        """Each space's unfinished jobs: its `maxInFlight` count under a cap, else the stream's."""
        ...

    def reserve(self, space: str, count: int, cap: int, now_ms: int) -> Reservation | None:
        """Room for `count` new jobs under `cap` on the space's in-flight count (None: no room)."""
        ...

    def settle(self, reservation: Reservation, left: int | None = None) -> None:
        """Give back what a create did not use of its reservation."""
        ...

    def heal(self, space: str, now_ms: int) -> int:
        """Give back reservations of creates that died; how many units came back."""
        ...


class TokenStorePort(Protocol):
    """Tokens as kept (`TokenRecord`: a hash of the secret, never the secret)."""

    def put(self, token: TokenRecord) -> None: ...

    def get(self, token_id: str, *, consistent: bool = True) -> TokenRecord | None: ...

    def all(self) -> list[TokenRecord]: ...

    def delete(self, token_id: str) -> bool:
        """Whether there was such a token."""
        ...


class JournalPort(Protocol):
    """Jobs' log lines and events, kept beside them in order."""

    def append_lines(self, space: str, job_id: str, first: int, lines: list[dict[str, Any]]) -> None:
        """Keep a report's lines, numbered from `first`."""
        ...

    def lines(self, space: str, job_id: str, after: int, limit: int) -> list[Line]:
        """Lines numbered `after` and up, at most `limit`, in order."""
        ...

    def put_event(self, space: str, job_id: str, seq: int, body: str, at_ms: int) -> None: ...

    def events(self, space: str, job_id: str, after: int, limit: int) -> list[Event]:
        """Events numbered `after` and up, at most `limit`, in order."""
        ...


class SecretsPort(Protocol):
    """The service's own secrets, made on first use and never changed."""

    def get(self, purpose: str, *, create: bool) -> bytes | None:
        """The secret for `purpose`; made now if there is none yet and `create`, else None."""
        ...


class SpreadStorePort(Protocol):
    """What a name's spread (`shared.spread`) counts and changes."""

    def count(self, space: str, name: str, window: int, amount: int) -> int:
        """Add `amount` to the name's count of creates in `window`; the count after it."""
        ...

    def load(self, space: str, name: str, window: int) -> int:
        """The name's recent count of creates (the last whole window, or this one if more)."""
        ...

    def set_spread(self, space: str, name: str, was: Spread, *, width: int, reach: int, now_ms: int) -> bool:
        """Change the name's width and reach if they are still as `was` read them."""
        ...

    def occupied(self, space: str, name: str, shards: Iterable[int]) -> bool:
        """Whether any of the name's ready shards numbered `shards` holds a pending entry."""
        ...


__all__ = [
    "CALLBACK",
    "DEPLOYMENT",
    "HEAL",
    "HINT",
    "NARROW",
    "RECOUNT",
    "SCHEDULE",
    "UNCLAIMED",
    "Attempt",
    "BacklogPlace",
    "BacklogStorePort",
    "BookPort",
    "Bucket",
    "Census",
    "ClaimPlan",
    "ClaimResult",
    "Connection",
    "ConnectionGone",
    "Counted",
    "DeadlineEntry",
    "DeliveryState",
    "DeliveryStorePort",
    "Destination",
    "Event",
    "Gauges",
    "Inserted",
    "JobChange",
    "JobConflict",
    "JobPage",
    "JobStorePort",
    "JournalPort",
    "KeyHolder",
    "Kind",
    "LastRun",
    "LeaseEntry",
    "Line",
    "ListenerStorePort",
    "Look",
    "Minute",
    "NameClaim",
    "NewRecord",
    "Overlap",
    "Owner",
    "Packed",
    "Policy",
    "Proposal",
    "Rate",
    "RecountStorePort",
    "ReportExtras",
    "Reservation",
    "RetryOf",
    "Schedule",
    "ScheduleConflict",
    "ScheduleStorePort",
    "SecretsPort",
    "Settings",
    "Snapshot",
    "SpaceListing",
    "SpacePolicies",
    "SpaceState",
    "SpaceStorePort",
    "Spread",
    "SpreadStorePort",
    "Survey",
    "Tally",
    "TallyStorePort",
    "Timer",
    "TokenRecord",
    "TokenStorePort",
    "Waiting",
    "Watched",
    "WatchedStorePort",
    "name_scope",
]


class ListenerStorePort(Protocol):
    """Wake's connections and listens (`shared.store.listeners`), as `shared.wake` asks."""

    def open(self, connection_id: str, caller: dict[str, Any], *, now_ms: int, until_ms: int) -> None:
        """Record a connection made by `caller` (its token's id, scopes and spaces)."""
        ...

    def connection(self, connection_id: str, now_ms: int) -> Connection | None:
        """The connection, unless it is gone or past its time."""
        ...

    def add(self, connection_id: str, space: str, names: Iterable[str], *, until_ms: int) -> None:
        """Listen to `names` of `space`; raises ConnectionGone if the connection is gone."""
        ...

    def listeners(self, space: str, name: str, now_ms: int) -> list[str]:
        """The connections listening to `name` in `space`."""
        ...

    def close(self, connection_id: str) -> int:
        """Remove the connection and all it listens to: the number of listens removed."""
        ...

    def mark(self, space: str, name: str, *, now_ms: int, every_ms: int, until_ms: int) -> int | None:
        """Note `name` hinted now unless it was within `every_ms` (None: noted; else when)."""
        ...


class ScheduleStorePort(Protocol):
    """Schedules (`shared.store.schedules`), as `shared.jobs.schedules` asks."""

    def get(self, space: str, schedule_id: str) -> Schedule | None:
        """The schedule as stored now (a strong read), None: there is none."""
        ...

    def write(self, schedule: Schedule, *, read: Schedule | None) -> Schedule:
        """Store `schedule` if the stored one is still `read` (None: none is); the schedule
        as written (its version bumped). Raises ScheduleConflict."""
        ...

    def enlist(self, space: str, schedule_id: str) -> None:
        """List the schedule in its space: before it is first written."""
        ...

    def delete(self, space: str, read: Schedule) -> None:
        """Delete the schedule if it is still `read`, then unlist it. Raises ScheduleConflict."""
        ...

    def unlist(self, space: str, schedule_id: str) -> None:
        """Take the schedule off its space's listing (gone already is fine)."""
        ...

    def page(self, space: str, after: str | None, limit: int) -> tuple[list[Schedule], str | None]:
        """Up to `limit` schedules by id after `after`, and the id to go on after (None: no more)."""
        ...


class TallyStorePort(Protocol):
    """Counts kept from the stream (`shared.store.tallies`), as the stream and the reads ask."""

    def count(self, records: list[Counted], now_ms: int) -> Tally:
        """Count a batch's records (in order) once each: what was counted now."""
        ...

    def mark(self, first_id: str, last_id: str, now_ms: int) -> None:
        """Mark the records from `first_id` to `last_id` counted (where a retry will start)."""
        ...

    def names(self, space: str, names: Iterable[str]) -> dict[str, Gauges]:
        """The pending and running jobs of those of `names` ever counted."""
        ...

    def spaces(self, spaces: Iterable[str]) -> dict[str, Gauges]:
        """Each counted space's pending and running jobs."""
        ...

    def minutes(self, space: str, name: str, since_ms: int) -> list[Minute]:
        """The name's minutes from `since_ms` on, oldest first."""
        ...


class RecountStorePort(Protocol):
    """A space's gauges recounted from its jobs (`shared.store.recounts`, `shared.recount`)."""

    def survey(self, space: str) -> Survey | None:
        """The space's survey under way (None: none)."""
        ...

    def begin(self, space: str, names: Iterable[str], now_ms: int) -> Survey:
        """Begin a survey: the names' gauges and versions read now, before any job."""
        ...

    def unfinished(self, space: str, partitions: Iterable[int]) -> dict[int, dict[str, Gauges]]:
        """Each of those job partitions' unfinished jobs, by name."""
        ...

    def record(self, space: str, read: Mapping[int, Mapping[str, Gauges]]) -> None:
        """Keep the partitions' counts with the survey, and mark them read."""
        ...

    def proposals(self, space: str) -> list[Proposal]:
        """Each name's gauges before the survey, and what its jobs held."""
        ...

    def settle(self, space: str, proposal: Proposal) -> bool:
        """Set the name's gauges to what its jobs held unless its version moved; whether set."""
        ...

    def end(self, space: str, names: Iterable[str]) -> None:
        """Remove the survey."""
        ...


class BacklogStorePort(Protocol):
    """Waiting counts, the deployment's or a name's, as the clock reads them
    (`shared.store.backlog`)."""

    def place(self, scope: str) -> BacklogPlace | None:
        """The clock's place in a scope's counts (None: never measured)."""
        ...

    def move(self, scope: str, old: BacklogPlace | None, new: BacklogPlace) -> bool:
        """Write the place unless moved since `old`; whether it was written."""
        ...

    def hours(self, scope: str, from_ms: int, to_ms: int) -> dict[int, int]:
        """Each hour's count, from the hour of `from_ms` to `to_ms`."""
        ...

    def minutes(self, scope: str, from_ms: int, to_ms: int) -> dict[int, int]:
        """Each minute's count from `from_ms` to `to_ms`, within the day of `from_ms`."""
        ...


class WatchedStorePort(Protocol):
    """The spaces that list names under `metrics` (`shared.store.watched`)."""

    def watch(self, space: str) -> None: ...

    def unwatch(self, space: str) -> None: ...

    def spaces(self) -> list[str]: ...

    def take_minute(self, space: str, minute_ms: int) -> bool:
        """Whether the caller publishes the space's counts of `minute_ms` (no one took it)."""
        ...


if TYPE_CHECKING:
    from shared.store.backlog import BacklogStore
    from shared.store.deliveries import DeliveryStore
    from shared.store.jobs import JobStore
    from shared.store.journal import Journal
    from shared.store.listeners import ListenerStore
    from shared.store.recounts import RecountStore
    from shared.store.schedules import ScheduleStore
    from shared.store.secrets import ServiceSecrets
    from shared.store.spaces import SpaceStore
    from shared.store.spread import SpreadStore
    from shared.store.tallies import TallyStore
    from shared.store.tokens import TokenStore
    from shared.store.watched import WatchedStore

    _jobs_speak: type[JobStorePort] = JobStore
    _deliveries_speak: type[DeliveryStorePort] = DeliveryStore
    _spaces_speak: type[SpaceStorePort] = SpaceStore
    _space_listing: type[SpaceListing] = SpaceStore
    _tokens_speak: type[TokenStorePort] = TokenStore
    _journal_speaks: type[JournalPort] = Journal
    _listeners_speak: type[ListenerStorePort] = ListenerStore
    _secrets_speak: type[SecretsPort] = ServiceSecrets
    _spread_speaks: type[SpreadStorePort] = SpreadStore
    _schedules_speak: type[ScheduleStorePort] = ScheduleStore
    _tallies_speak: type[TallyStorePort] = TallyStore
    _backlog_speaks: type[BacklogStorePort] = BacklogStore
    _recounts_speak: type[RecountStorePort] = RecountStore
    _watched_speaks: type[WatchedStorePort] = WatchedStore
