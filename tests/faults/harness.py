"""A crash harness: kill an operation's write sequence at one write, retry as a client (or
AWS) would, drive everything to its end, and check what must hold.

The service keeps its promises with conditional writes, one item at a time (but for a few
transactions: a keyed create's key and job, a job and its payload's side item, a job
name and its space's listing), and with retries that are safe to repeat;
so what a crash can break is the state between two writes of one operation. `Faults`
sits between the runtime and its DynamoDB and S3 clients, numbers every write an
operation makes, and at the n-th one kills the process: either before the write is sent,
or after DynamoDB applied it but before the answer came back (a lost answer: the nasty
one, since the caller cannot tell it from the first). A killed process writes nothing
more, so every write after the n-th fails too until the harness revives it for the
retry, as a new Lambda invocation would start.

`World` is one fresh service (moto, a `ManualClock`, a callback receiver that counts), with
ledgers of what the clients saw: every attempt handed out, every id answered, every
success a callback receiver answered. `World.settle` then plays workers, the stream, the
clock and DynamoDB's TTL until nothing is left to do (past every lease, callback retry,
retention, key window and tombstone), and `World.problems` lists every broken promise.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import boto3
import httpx
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from devserver.background import as_lambda_record, handler, tick
from devserver.gateway import LambdaContext
from devserver.wiring import BUCKET, REGION, TABLE, build_runtime, local_environment
from shared.clock import ManualClock
from shared.config import Config
from shared.recount import SURVEY
from shared.runtime import Runtime, install
from shared.schedules import next_fire
from shared.schema import NewToken
from shared.store import dynamo, keys
from shared.store.codec import purged
from shared.store.deliveries import TOMBSTONE_MS
from shared.store.timers import RECOUNT, SCHEDULE, Timer, decode
from tests.support import Answer, Api, Background

SPACE = "crash"
JOBS = f"/v1/spaces/{SPACE}/jobs"
SCHEDULES = f"/v1/spaces/{SPACE}/schedules"
HOOK = "https://hooks.example.com/emit"
MINUTE_MS = 60_000
DAY_MS = 86_400_000

WRITES = frozenset(
    {
        "put_item",
        "update_item",
        "delete_item",
        "transact_write_items",
        "batch_write_item",
        "put_object",
        "delete_object",
    }
)

ALLOWED_TO_STAY = {
    "T": "tokens: an admin revokes them",
    "SPACES": "the list of spaces (GET /v1/spaces): a space outlives its jobs",
    "S#": "a space's settings, job names and in-flight count: a space outlives its jobs",
    "N#": "a name's sampled count of recent creates (shared.spread): a name outlives its jobs",
    "RUN#": "a name's concurrency slot counters: a name outlives its jobs (each must count 0)",
    "RATE#": "a name's rate items (the time its rate next allows): a name outlives its jobs",
    "Q#": "a concurrency key's item (its running count, its entry): a name outlives its jobs (must count 0)",
    "CNT#": "a space's and its names' pending and running counts (shared.counts): each must count 0",
    "WAIT#": "the deployment's waiting jobs by minute (shared.backlog): each minute's shards must add to 0",
    "WAITH#": "the same by hour: each hour's shards must add to 0",
    "BACKLOG#": "the clock's place in the waiting counts",
}
"""What may stay in the table for good after every job is gone, and why. Everything else
(jobs, side items, lines, events, keys, deliveries, the books' buckets and slot maps) must
be removed by the clock, the stream or TTL: see `LEFT_TO_TTL`.

S3 objects that no job item names (a value written by a process that died before the
job item that would point at it) are left to the bucket's lifecycle rule by design
(`infra/constructs/data.py`, rule `expire-values`: every object expires
`infra/constants.py` BLOB_EXPIRY_DAYS, 1,125 days, after it was written, named or not);
an object a job named must go with its job."""

LEFT_TO_TTL = {
    "C#": "a removed job's delivery tombstone (state REMOVED): TTL two days after the removal",
    "K#": "an idempotency key whose job was removed: TTL a day after the job finished",
}
"""What the stream's cleanup after a removed job leaves for DynamoDB's TTL, and why. Each
may wait only if it carries a `ttl` (a TTL janitor removes nothing else): checked right
after the cleanup (`World.waiting`), before time passes beyond those TTLs."""


class Killed(BaseException):
    """The process died. A BaseException, so no `except Exception` in the service can catch
    it and carry on as a surviving process would."""


_RANDOM_PART = re.compile(r"-[0-9a-f]{6}$")
"""A report's place outside its job item ends in a random part (`result-1-26b07f`,
`shared.store.blobs.pack`): case ids leave it out, so they are the same on every run."""


def describe(method: str, kwargs: dict[str, Any]) -> str:
    """A short name for one write: the call and the kind of item (or object) it touches."""
    if method in ("put_object", "delete_object"):
        place = _RANDOM_PART.sub("", str(kwargs["Key"]).rsplit("/", 1)[-1])
        return f"s3{method.removesuffix('_object')}-{place}"
    if method == "transact_write_items":
        kinds = [_kind(next(iter(action.values()))) for action in kwargs["TransactItems"]]
        return "transact-" + "+".join(kinds)
    if method == "batch_write_item":
        [requests] = kwargs["RequestItems"].values()
        verb = "batchput" if "PutRequest" in requests[0] else "batchdelete"
        first = requests[0].get("PutRequest", {}).get("Item") or requests[0]["DeleteRequest"]["Key"]
        return f"{verb}-{_kind({'Item': first})}"
    verb = method.removesuffix("_item")
    return f"{verb}-{_kind(kwargs)}"


def _kind(params: dict[str, Any]) -> str:
    key = params.get("Item") or params["Key"]
    pk, sk = key["pk"]["S"], key["sk"]["S"]
    prefix = pk.split("#", 1)[0]
    if prefix == "S":
        return "S." + sk.split("#", 1)[0]
    if prefix == "B":
        return "B." + _RANDOM_PART.sub("", sk)
    return prefix


def _unfinished(items: list[dict[str, Any]]) -> bool:
    """A job still to finish, or a callback still to deliver."""
    return any(
        item.get("status") in ("PENDING", "RUNNING") or item.get("state") == "PENDING"
        for item in items
        if item["pk"].startswith(("J#", "C#"))
    )


def _stays(item: dict[str, Any]) -> bool:
    pk = item["pk"]
    return any(pk == allowed or pk.startswith(allowed) for allowed in ALLOWED_TO_STAY)


@dataclass(frozen=True)
class Edit:
    """A schedule's definition as an edit's answer gave it, from when the edit was made."""

    at_ms: int
    cron: str
    timezone: str
    paused: bool
    overlap: str


@dataclass
class Fired:
    n: int
    when: str
    write: str


class Faults:
    """Counts the writes made through the clients it wraps, and kills the process at one."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.refused: set[int] = set()
        """The writes (by number) that DynamoDB or S3 refused: nothing of them applied."""
        self.at: int | None = None
        self.when = "after"
        self.dead = False
        self.fired: Fired | None = None

    def arm(self, n: int | None, when: str = "after") -> None:
        """Start counting an operation's writes; kill at the n-th (None: never)."""
        assert when in ("before", "after")
        self.log, self.refused, self.at, self.when, self.dead = [], set(), n, when, False

    def revive(self) -> None:
        """A new process: writes go through again, and nothing more is killed."""
        self.at, self.dead = None, False

    def write(self, method: str, kwargs: dict[str, Any], call: Callable[[], Any]) -> Any:
        if self.dead:
            raise Killed(f"dead process tried {method}")
        self.log.append(describe(method, kwargs))
        n = len(self.log)
        if n != self.at:
            try:
                return call()
            except Exception:
                self.refused.add(n)
                raise
        self.dead = True
        self.fired = Fired(n, self.when, self.log[-1])
        if self.when == "after":
            with contextlib.suppress(Exception):  # e.g. a condition that failed: nothing applied
                call()  # DynamoDB applied it; the answer never arrives
        raise Killed(f"killed {self.when} write {n} ({self.log[-1]})")


class Wrapped:
    """A client whose writes go through `Faults`; everything else passes straight on."""

    def __init__(self, client: Any, faults: Faults) -> None:
        self._client = client
        self._faults = faults

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name not in WRITES:
            return attr

        def call(**kwargs: Any) -> Any:
            return self._faults.write(name, kwargs, lambda: attr(**kwargs))

        return call


@dataclass
class Receiver:
    """A callback target that counts: every POST, and what it answered."""

    fail_next: int = 0
    calls: list[tuple[str, int]] = field(default_factory=list)
    """(job id, status answered) per POST, in order."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        job_id = json.loads(request.content)["jobId"]
        status = 204
        if self.fail_next:
            self.fail_next -= 1
            status = 500
        self.calls.append((job_id, status))
        return httpx.Response(status)

    def successes(self) -> Counter[str]:
        return Counter(job_id for job_id, status in self.calls if 200 <= status < 300)


@dataclass
class World:
    """One fresh service and what its clients saw."""

    rt: Runtime
    api: Api
    bg: Background
    clock: ManualClock
    receiver: Receiver
    faults: Faults
    handed: list[tuple[str, int]] = field(default_factory=list)
    """Every (job id, attempt) a claim answer handed to a worker."""
    held: list[tuple[str, int]] = field(default_factory=list)
    """Attempts the scenario's workers still hold: they finish them when the world settles."""
    answered: set[str] = field(default_factory=set)
    """Every job id a create answered."""
    one_per_key: set[str] = field(default_factory=set)
    """Keys used by creates: each must end with exactly one job."""
    errors: list[str] = field(default_factory=list)
    """Every answer of 500: once the crashed process is gone, everything must work."""
    repeat_allowed: set[str] = field(default_factory=set)
    """Jobs whose callback succeeded just before the crash, before its result was recorded:
    the README allows that one try to be repeated."""
    waiting: list[dict[str, Any]] = field(default_factory=list)
    """What was left, beyond what stays for good, once the stream had cleaned up after the
    removed jobs: it may only wait for TTL (`LEFT_TO_TTL`)."""
    notify: dict[str, frozenset[str]] = field(default_factory=dict)
    """The space's notice destinations (job name: the statuses it covers), set before any
    job: every job that ends in one of them must send exactly one notice there."""
    final: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every job item seen, as last seen: at the end, once every job has finished (and,
    for jobs retention removed earlier, just before TTL removed them)."""
    edits: dict[str, list[Edit]] = field(default_factory=dict)
    """Every schedule's definitions, by id, as its edits answered them, in order: each fire
    time a definition brought while it held must make exactly one job (`expected_fires`)."""
    triggered: set[tuple[str, int]] = field(default_factory=set)
    """(schedule id, time) of every trigger sent: its job carries that time, not a fire time."""
    fired_until: int = 0
    """When the settle stopped the schedules (`wind_down`): every fire time up to then counts."""
    schedule_notes: list[str] = field(default_factory=list)
    """What `wind_down` found wrong with a schedule before it made it fire once more."""

    # -- what clients do ------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None) -> Answer:
        answer = self.api.request(method, path, body)
        if answer.status >= 500:
            self.errors.append(f"{method} {path} answered {answer.status}: {answer.body}")
        return answer

    def create(self, body: Any) -> Answer:
        answer = self.request("POST", JOBS, body)
        if answer.status == 200:
            jobs = answer.body.get("jobs", [answer.body])
            self.answered.update(j["id"] for j in jobs)
        for job in body.get("jobs", [body]) if isinstance(body, dict) else body:
            if job.get("key") is not None:
                self.one_per_key.add(job["key"])
        return answer

    def claim(self, count: int, **options: Any) -> list[dict[str, Any]]:
        answer = self.request("POST", f"{JOBS}:claim", {"count": count, **options})
        jobs: list[dict[str, Any]] = answer.body["jobs"] if answer.status == 200 else []
        for job in jobs:
            self.handed.append((job["id"], job["attempt"]))
            self.held.append((job["id"], job["attempt"]))
        return jobs

    def report(self, job_id: str, attempt: int, **parts: Any) -> Answer:
        answer = self.request("POST", f"{JOBS}:report", {"id": job_id, "attempt": attempt, **parts})
        finishing = {"complete", "fail", "release"} & parts.keys()
        if finishing and (job_id, attempt) in self.held:
            self.held.remove((job_id, attempt))
        return answer

    def cancel(self, ids: list[str]) -> Answer:
        return self.request("POST", f"{JOBS}:cancel", ids)

    def put_schedule(self, schedule_id: str, body: dict[str, Any]) -> Answer:
        return self._edited(schedule_id, self.request("PUT", f"{SCHEDULES}/{schedule_id}", body))

    def patch_schedule(self, schedule_id: str, changes: dict[str, Any]) -> Answer:
        return self._edited(schedule_id, self.request("PATCH", f"{SCHEDULES}/{schedule_id}", changes))

    def _edited(self, schedule_id: str, answer: Answer) -> Answer:
        if answer.status == 200:
            b = answer.body
            edit = Edit(self.clock.now_ms(), b["cron"], b["timezone"], b["paused"], b["overlap"])
            self.edits.setdefault(schedule_id, []).append(edit)
        return answer

    def trigger(self, schedule_id: str, key: str | None = None) -> Answer:
        self.triggered.add((schedule_id, self.clock.now_ms()))
        body = {"key": key} if key is not None else None
        answer = self.request("POST", f"{SCHEDULES}/{schedule_id}:trigger", body)
        if answer.status == 200:
            self.answered.add(answer.body["id"])
        if key is not None:
            self.one_per_key.add(key)
        return answer

    # -- what runs without a request -------------------------------------------

    def stream_invoke(self, records: list[dict[str, Any]]) -> None:
        """One invocation of the stream function with these records, as Lambda makes it."""
        handler("stream_handler")({"Records": records}, LambdaContext("stream_handler", 300, 512))

    def tick_invoke(self) -> None:
        """One invocation of the clock function (without reading the stream first), then
        the callback sender's run of what it handed over, as SQS hands it on at once."""
        tick(MINUTE_MS)
        self.bg.sender.drain()

    # -- the crash -------------------------------------------------------------

    def crash(self, step: Callable[[], object], n: int, when: str) -> None:
        """Run `step`, killed at its n-th write; then a new process."""
        self.faults.arm(n, when)
        with contextlib.suppress(Killed):
            step()
        fired = self.faults.fired
        assert fired is not None and fired.n == n, f"the operation made fewer than {n} writes"
        self.faults.revive()
        # A callback the receiver took, whose success the crash kept from being recorded,
        # may be sent once more (README, Callbacks: "a crash in the middle of a try").
        for job_id in self.receiver.successes():
            delivery = self.rt.deliveries.get(SPACE, job_id)
            if delivery is not None and delivery.get("state") != "DELIVERED":
                self.repeat_allowed.add(job_id)

    def count(self, step: Callable[[], object]) -> list[tuple[str, bool]]:
        """The writes `step` makes when nothing fails, each with whether it applied (a
        write whose condition failed applied nothing)."""
        self.faults.arm(None)
        step()
        log = [(write, n not in self.faults.refused) for n, write in enumerate(self.faults.log, start=1)]
        self.faults.revive()
        return log

    # -- to the end --------------------------------------------------------------

    def settle(self, *, rounds: int = 12) -> None:
        """Workers finish what they hold, then claim and complete everything; the stream and
        the clock run, time passes beyond every lease and callback retry; until every job
        has finished and no callback is pending (a callback the stream never recorded is
        found by the clock a grace minute after its job finished). With schedules, each is
        made to fire once more (`wind_down`), and deleted, and its jobs finished. Then time
        passes beyond retention, TTL removes the finished jobs, and the clock and the stream
        clean up after them; then beyond the TTLs that cleanup set (a delivery's tombstone, two
        days; a key item, a day after its job finished), and TTL removes those too."""
        self.bg.stream()
        for job_id, attempt in list(self.held):
            self.report(job_id, attempt, complete={"result": "done"})
        items = self.finish(rounds)
        if self.edits:
            self.wind_down()
            items = self.finish(rounds)
        jobs_now = [item for item in items if item["pk"].startswith("J#")]
        self.observe(jobs_now)
        self.read_journals(jobs_now)
        self.clock.advance(31 * DAY_MS)  # past both retentions and a callback's day of tries
        self.tick_invoke()
        self.expire_ttl()
        self.bg.stream()  # the REMOVE records: lines, events, values go; tombstones, key TTLs
        self.waiting = [item for item in self.items() if not _stays(item)]
        # Past every TTL the cleanup set (a tombstone's two days; a key item's day after its
        # job finished is behind us already): TTL removes them, and the stream sees it.
        self.clock.advance(TOMBSTONE_MS + MINUTE_MS)
        self.bg.expire_ttl()
        self.bg.stream()
        self.bg.runtime.timers.file(SPACE, [Timer(RECOUNT, SURVEY, self.clock.now_ms())])
        # The clock ticks on: a recount surveys the space (16 job partitions a tick)
        # and settles once the stream's records are past their age (`shared.recount`): the
        # gauges a lost batch left off are set right. What it filed last (a delivery's check
        # after handing it over) falls due and finds nothing to do, and the books' slot maps
        # go a slot after theirs.
        for _ in range(4):
            self.clock.advance(6 * MINUTE_MS)
            self.tick_invoke()
        self.clock.advance(self.bg.runtime.config.recount_settle_ms)
        self.tick_invoke()
        for _ in range(3):
            self.clock.advance(6 * MINUTE_MS)
            self.tick_invoke()

    def finish(self, rounds: int) -> list[dict[str, Any]]:
        """Claim and complete everything; the stream and the clock run, time passes beyond
        every lease and callback retry; until every job has finished and no callback is
        pending. The items then (or as the last tick left them: something is stuck)."""
        for _ in range(rounds):
            while jobs := self.claim(100):
                for job in jobs:
                    self.report(job["id"], job["attempt"], complete={"result": "done"})
            self.bg.stream()
            items = self.items()
            if not _unfinished(items):
                return items
            self.clock.advance(6 * MINUTE_MS)  # past the 5-minute default lease and every retry wait
            self.tick_invoke()
        return self.items()

    def wind_down(self) -> None:
        """Every schedule, once its jobs so far have finished: its `lastRun` must be its latest
        job, and its next fire time filed in the timer book; time then passes to the latest
        of those times and the clock ticks, which must make each one's job (`problems` counts
        them, every fire time up to now). Then each schedule is deleted, so that none fires
        while time passes beyond retention."""
        live = self.items(keys.schedule(SPACE, "")["pk"])
        filed = {
            (bucket["space"], timer.subject, timer.due_ms)
            for bucket in self.items(keys.TIMER_PREFIX)
            for timer in decode(bucket["jobs"])
            if timer.kind == SCHEDULE
        }
        jobs = self.items("J#")
        now = self.clock.now_ms()
        nexts = [now]
        for item in live:
            self.schedule_notes += _last_run_problems(item, jobs)
            if item["paused"] or "nextAtMs" not in item:
                continue
            at = int(item["nextAtMs"])
            if (SPACE, item["id"], at) not in filed:
                self.schedule_notes.append(f"schedule {item['id']}: its next fire time {at} is not filed")
            nexts.append(at)
        self.clock.advance(max(nexts) - now)
        self.tick_invoke()
        self.fired_until = self.clock.now_ms()
        for item in live:
            self.request("DELETE", f"{SCHEDULES}/{item['id']}")

    def expected_fires(self, schedule_id: str) -> dict[int, str]:
        """The fire times that came while each definition of the schedule held (from its
        edit to the next, or to `fired_until`), unpaused, each with its `overlap` then."""
        edits = self.edits.get(schedule_id, [])
        out: dict[int, str] = {}
        for edit, following in zip(edits, [*edits[1:], None], strict=True):
            until = following.at_ms - 1 if following is not None else self.fired_until
            at: int | None = edit.at_ms
            while not edit.paused and (at := next_fire(edit.cron, edit.timezone, at)) is not None:
                if at > until:
                    break
                out[at] = edit.overlap
        return out

    def read_journals(self, jobs: list[dict[str, Any]], *, most_pages: int = 20) -> None:
        """Read the lines and events of these jobs as a client pages through them: each
        listing must come to its end (a `null` cursor), whatever a crash lost."""
        for item in jobs:
            if purged(item, self.clock.now_ms()):
                continue  # gone for every read already
            job_id = item["sk"]
            for kind, count in (("lines", "lineCount"), ("events", "eventCount")):
                if not item.get(count) or item["status"] in ("PENDING", "RUNNING"):
                    continue
                cursor = None
                for _ in range(most_pages):
                    query: dict[str, Any] = {"cursor": cursor} if cursor is not None else {}
                    answer = self.api.get(f"{JOBS}/{job_id}/{kind}", query=query)
                    assert answer.status == 200, answer
                    page = answer.body
                    if page["cursor"] is None:
                        break
                    if page["cursor"] == cursor:
                        self.errors.append(f"job {job_id}: its {kind} never end (cursor {cursor} again)")
                        break
                    cursor = page["cursor"]

    def observe(self, jobs: list[dict[str, Any]] | None = None) -> None:
        """Note every job item as it stands now (`jobs`: as just read)."""
        self.final |= {item["sk"]: item for item in (self.items("J#") if jobs is None else jobs)}

    def expire_ttl(self) -> None:
        """DynamoDB's TTL, after noting the jobs it is about to remove."""
        self.observe()
        self.bg.expire_ttl()

    def items(self, prefix: str = "") -> list[dict[str, Any]]:
        """Every item of the table whose pk starts with `prefix` (a scan: tests only)."""
        found: list[dict[str, Any]] = []
        start = None
        while True:
            params: dict[str, Any] = {"TableName": self.rt.table}
            if start:
                params["ExclusiveStartKey"] = start
            answer = self.rt.dynamodb.scan(**params)
            found += [dynamo.deserialize(i) for i in answer.get("Items", [])]
            start = answer.get("LastEvaluatedKey")
            if not start:
                return [i for i in found if i["pk"].startswith(prefix)]

    def objects(self) -> list[str]:
        listed = self.rt.s3.list_objects_v2(Bucket=self.rt.bucket)
        return sorted(o["Key"] for o in listed.get("Contents", []))

    # -- what must hold ------------------------------------------------------------

    def problems(self) -> list[str]:
        """Every broken promise, in words."""
        found = list(self.errors)
        final = self.final
        left = self.items()
        listed = {(i["pk"], i["sk"]) for i in left if i["pk"].startswith("S")}
        for job_id in sorted(self.answered - final.keys()):
            found.append(f"job {job_id} was answered to a client but does not exist: lost")
        for job_id, item in sorted(final.items()):
            if item["status"] not in ("COMPLETED", "FAILED", "CANCELLED"):
                found.append(f"job {job_id} is stuck {item['status']} (attempt {item['attempt']})")
            if not self._findable(item, listed):
                found.append(f"job {job_id}: its space or name is not listed: the clock never finds it")
        keyed = Counter(item["key"] for item in final.values() if "key" in item)
        for key in sorted(self.one_per_key):
            if keyed[key] != 1:
                found.append(f"key {key!r} ended with {keyed[key]} jobs, not exactly one")
        for (job_id, attempt), times in sorted(Counter(self.handed).items()):
            if times > 1:
                found.append(f"job {job_id} attempt {attempt} was handed out {times} times")
        found += self._callback_problems()
        found += self._notice_problems()
        found += self.schedule_notes + self._schedule_problems()
        found += self._leftovers(left)
        found += self._counts(left)
        return found

    @staticmethod
    def _counts(left: list[dict[str, Any]]) -> list[str]:
        """Every job has finished: no count may still hold anything (a leak would be for
        good: a space answering 429, a name never handed out again), and no reservation of
        a create that died may be left unhealed."""
        found = []
        for item in left:
            counter = item["pk"].startswith(("RUN#", "Q#")) or (
                item["pk"].startswith("S#") and item["sk"] == "inflight"
            )
            if not counter:
                continue
            if item.get("held", 0) != 0:
                found.append(f"count {item['pk']} / {item['sk']} holds {item['held']} with no job unfinished")
            reserved = sorted(a for a in item if a.startswith("r#"))
            if reserved:
                found.append(f"count {item['pk']} keeps reservations nobody settled: {reserved}")
        # The stream's counts, once each record however often the stream or a crash replayed it.
        for item in left:
            if item["pk"].startswith("CNT#") and (item.get("pending", 0), item.get("running", 0)) != (0, 0):
                found.append(
                    f"count {item['pk']} / {item['sk']}: pending {item.get('pending', 0)}, "
                    f"running {item.get('running', 0)} with no job unfinished"
                )
        waiting: dict[tuple[str, str], int] = {}
        for item in left:
            if item["pk"].startswith(("WAIT#", "WAITH#")):
                # A minute's (an hour's) count is the sum of its shards' (the shard is the
                # partition key's last field).
                period = f"{item['pk'].rpartition('#')[0]} / {item['sk']}"
                waiting[period] = waiting.get(period, 0) + int(item.get("n", 0))
        found += [f"count {at}: {n} waiting with no job unfinished" for at, n in waiting.items() if n]
        return found

    def _findable(self, item: dict[str, Any], listed: set[tuple[str, str]]) -> bool:
        space = item["pk"].split("#")[1]
        return ("SPACES", space) in listed and (f"S#{space}", f"name#{item['name']}") in listed

    def _callback_problems(self) -> list[str]:
        found = []
        successes = self.receiver.successes()
        for job_id, item in sorted(self.final.items()):
            if "callback" not in item or item["status"] in ("PENDING", "RUNNING"):
                continue
            most = 2 if job_id in self.repeat_allowed else 1
            if successes[job_id] == 0:
                found.append(f"job {job_id} finished {item['status']} but its callback never arrived")
            elif successes[job_id] > most:
                found.append(f"job {job_id}'s callback succeeded {successes[job_id]} times")
        for job_id in sorted(successes.keys() - self.final.keys()):
            found.append(f"a callback for job {job_id}, which never finished, succeeded")
        return found

    def _schedule_problems(self) -> list[str]:
        """Exactly one job per schedule and fire time that came while it was unpaused (none
        for a time that is not one), but for a time `overlap: SKIP` passed over while an
        earlier job was unfinished; and SKIP made none while its last job was unfinished."""
        found: list[str] = []
        made: dict[str, list[dict[str, Any]]] = {}
        for item in self.final.values():
            if "schedule" in item:
                made.setdefault(item["schedule"]["id"], []).append(item)
        for sid in sorted(self.edits.keys() | made.keys()):
            jobs = sorted(made.get(sid, []), key=lambda j: (_fired_at(j), j["createdAtMs"]))
            fires = [j for j in jobs if (sid, _fired_at(j)) not in self.triggered]
            expected = self.expected_fires(sid)
            found += _fire_counts(sid, jobs, fires, expected)
            found += _overlaps(sid, jobs, fires, expected)
        return found

    def _notice_problems(self) -> list[str]:
        if not self.notify:
            return []
        sent: Counter[tuple[str, str]] = Counter()
        for item in self.final.values():
            if item["name"] in self.notify:
                [raw] = self.rt.jobs.blobs.read_many(SPACE, [(item, "payload")])
                sent[(item["name"], json.loads(raw or b"null")["jobId"])] += 1
        found = []
        for job_id, item in sorted(self.final.items()):
            if item["name"] in self.notify:
                continue
            for name, statuses in sorted(self.notify.items()):
                want = 1 if item["status"] in statuses else 0
                if sent[(name, job_id)] != want:
                    found.append(
                        f"job {job_id} ended {item['status']} and sent {sent[(name, job_id)]} notices "
                        f"to {name}, not {want}"
                    )
        return found

    def _leftovers(self, left: list[dict[str, Any]]) -> list[str]:
        found, seen = [], set()
        for item in self.waiting:
            if item["pk"].startswith(tuple(LEFT_TO_TTL)) and item.get("ttl") is None:
                found.append(f"left for TTL without a ttl: {item['pk']} / {item['sk']}")
                seen.add((item["pk"], item["sk"]))
        found += [
            f"left behind: {i['pk']} / {i['sk']}"
            for i in left
            if not _stays(i) and (i["pk"], i["sk"]) not in seen
        ]
        named = set()
        for item in self.final.values():
            for name in ("payload", "result", "error"):
                kind, _, place = str(item.get(f"{name}Ref") or "").partition(":")
                if kind == "s3":
                    named.add(f"{SPACE}/{item['sk']}/{place or name}")
        found += [f"left behind in S3: {key}" for key in self.objects() if key in named]
        return found


def _fired_at(job: dict[str, Any]) -> int:
    return int(job["schedule"]["atMs"])


def _unfinished_at(jobs: list[dict[str, Any]], at: int) -> bool:
    """Whether a job of the schedule made for an earlier time was still unfinished at `at`."""
    return any(_fired_at(j) < at and j.get("finishedAtMs", at + 1) > at for j in jobs)


def _fire_counts(
    sid: str, jobs: list[dict[str, Any]], fires: list[dict[str, Any]], expected: dict[int, str]
) -> list[str]:
    found = []
    counted = Counter(_fired_at(j) for j in fires)
    for at, n in sorted(counted.items()):
        if at not in expected:
            found.append(f"schedule {sid} made {n} jobs for {at}, which is none of its fire times")
        elif n > 1:
            found.append(f"schedule {sid} made {n} jobs for its fire time {at}, not one")
    for at, overlap in sorted(expected.items()):
        if counted[at] == 0 and not (overlap == "SKIP" and _unfinished_at(jobs, at)):
            found.append(f"schedule {sid} made no job for its fire time {at}")
    return found


def _overlaps(
    sid: str, jobs: list[dict[str, Any]], fires: list[dict[str, Any]], expected: dict[int, str]
) -> list[str]:
    """Jobs `overlap: SKIP` made while the job before them was unfinished. The clock moves
    only by hand: a last job finished in the very ms its follower was made counts as
    unfinished (no scenario finishes one at a fire's tick)."""
    found = []
    for last, job in itertools.pairwise(jobs):
        skip = expected.get(_fired_at(job)) == "SKIP" and job in fires
        if skip and last.get("finishedAtMs", job["createdAtMs"]) >= job["createdAtMs"]:
            found.append(
                f"schedule {sid} (overlap SKIP) made {job['sk']} for {_fired_at(job)} while its"
                f" last job {last['sk']} was unfinished"
            )
    return found


def _last_run_problems(schedule: dict[str, Any], jobs: list[dict[str, Any]]) -> list[str]:
    """A schedule's `lastRun` must name its latest job (a fire's or a trigger's): what
    `overlap: SKIP` waits for."""
    mine = [j for j in jobs if j.get("schedule", {}).get("id") == schedule["id"]]
    noted = (schedule.get("lastRun") or {}).get("jobId")
    if not mine:
        return [] if noted is None else [f"schedule {schedule['id']}: its lastRun {noted} is no job of it"]
    latest = max(_fired_at(j) for j in mine)
    ids = sorted(j["sk"] for j in mine if _fired_at(j) == latest)
    if noted not in ids:
        return [f"schedule {schedule['id']}: its lastRun is {noted}, not its latest job {' or '.join(ids)}"]
    return []


class ShardReader:
    """The table's stream read straight from the embedded DynamoDB's shard: the records
    GetRecords would answer, handed over as Lambda hands them over (`as_lambda_record`),
    without the request and its answer's serialization, which made a fifth of the
    harness's time (every record carries whole item images)."""

    def __init__(self, arn: str) -> None:
        self.arn = arn
        self.read_up_to = 0

    def read(self) -> list[dict[str, Any]]:
        shard = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].tables[TABLE].stream_shard
        assert shard is not None, "the table has a stream"
        new = shard.items[self.read_up_to :]
        self.read_up_to += len(new)
        return [as_lambda_record(record.to_json(), self.arn) for record in new]


class Service:
    """One embedded AWS (moto) for many worlds: its clients are slow to make (a tenth of a
    second each), an empty table and bucket quick."""

    def __init__(self) -> None:
        local_environment()
        self.clients = {
            name: boto3.client(name, region_name=REGION)  # type: ignore[call-overload]
            for name in ("dynamodb", "dynamodbstreams", "s3")
        }

    def client(self, name: str, **_: Any) -> Any:
        return self.clients[name]

    def empty(self) -> None:
        """Forget the last world: its table (with its stream) and its bucket."""
        ddb, s3 = self.clients["dynamodb"], self.clients["s3"]
        if TABLE in ddb.list_tables()["TableNames"]:
            ddb.delete_table(TableName=TABLE)
        if BUCKET in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
            for listed in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
                s3.delete_object(Bucket=BUCKET, Key=listed["Key"])
            s3.delete_bucket(Bucket=BUCKET)


@contextlib.contextmanager
def embedded_aws() -> Iterator[Service]:
    with mock_aws():
        yield Service()


@contextlib.contextmanager
def world(service: Service) -> Iterator[World]:
    """A fresh service: an empty table and bucket, an admin token, a receiver for callbacks."""
    service.empty()
    clock = ManualClock()
    with mock.patch("boto3.client", service.client):
        rt = build_runtime(clock=clock, config=Config.local().model_copy(update={"claim_wait_ms": 0}))
        bg = Background(rt)
    bg.reader = ShardReader(bg.reader.arn)  # type: ignore[assignment]
    install(rt)
    try:
        token = str(rt.tokens.mint(NewToken(scopes=["admin"], name="crash harness"))["token"])
        receiver = Receiver()
        rt.dispatcher.transport = httpx.MockTransport(receiver)
        faults = Faults()
        # The same draws in a clean run and in each crashed one: the sampled create count
        # (`shared.spread`) writes or not by chance, and the runs' writes are compared.
        rt.context.spreader.rand = random.Random(0).random
        rt.sweeper.spreader.rand = random.Random(1).random
        # No day's recount filed by the stream: its survey's writes depend on which job
        # partitions the (random) ids fall in, and the runs' writes are compared. `settle`
        # files one.
        rt.stream.recount = None
        rt.dynamodb = rt.db.client = Wrapped(rt.db.client, faults)
        rt.s3 = rt.blobs.s3 = Wrapped(rt.blobs.s3, faults)
        yield World(rt, Api(token), bg, clock, receiver, faults)
    finally:
        install(None)
