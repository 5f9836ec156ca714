"""Wake through its handlers (`functions/wake_*.py`, as API Gateway's WebSocket API calls them)
and the stream's: who may connect and listen, which changes hint whom, coalescing, and
cleanup. Hints go to a recording `Poster`; hints put off wait in the runtime's `HeldLater`
until a test moves its clock and sends them (`fire_due`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from devserver.gateway import LambdaContext
from devserver.wake import event, fire_due, invoke
from functions.wake_later import lambda_handler as wake_later
from shared import wake as wake_module
from shared.clock import ManualClock
from shared.runtime import Runtime
from shared.store.listeners import ListenerStore, connection_key, listen_partition
from shared.wake import HINT_EVERY_MS, MAX_LISTEN_NAMES, ROUTES, Gone, HeldLater, Wake
from tests.conftest import mint
from tests.support import Api, Background, EndpointAws, LocalAws

BY_KEY = {route.key: route for route in ROUTES}
SPACE = "/v1/spaces/wk"


@dataclass
class Recorder:
    """A `Poster` that records every post; a connection in `gone` answers 410, in `broken` fails."""

    posts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)
    broken: set[str] = field(default_factory=set)

    def post(self, connection_id: str, data: bytes) -> None:
        if connection_id in self.gone:
            raise Gone(connection_id)
        if connection_id in self.broken:
            raise ConnectionError("the network is down")
        self.posts.append((connection_id, json.loads(data)))

    def to(self, connection_id: str) -> list[dict[str, Any]]:
        return [message for to, message in self.posts if to == connection_id]


@pytest.fixture
def posts(rt: Runtime) -> Recorder:
    recorder = Recorder()
    rt.wake.poster = recorder
    return recorder


@pytest.fixture
def bg(rt: Runtime, local_aws: LocalAws | EndpointAws) -> Background:
    return Background(rt, streams_client=local_aws.streams)


def connect(cid: str, headers: dict[str, str]) -> dict[str, Any]:
    return invoke(BY_KEY["$connect"], event(BY_KEY["$connect"], cid, headers=headers))


def send(cid: str, message: Any) -> dict[str, Any]:
    body = message if isinstance(message, str) else json.dumps(message)
    route = wake_module.route_of(body)
    answer = invoke(route, event(route, cid, body=body))
    return dict(json.loads(answer["body"]))


def listen(cid: str, space: str, names: list[str]) -> dict[str, Any]:
    return send(cid, {"action": "listen", "space": space, "names": names})


@pytest.fixture
def worker(admin_token: str) -> Callable[..., str]:
    """A connected worker listening to `names` of `wk`: its connection id."""

    def make(cid: str, names: list[str], token: str = admin_token, space: str = "wk") -> str:
        assert connect(cid, {"Authorization": f"Bearer {token}"})["statusCode"] == 200
        assert listen(cid, space, names)["type"] == "listening"
        return cid

    return make


def hints(posts: Recorder, cid: str) -> list[str]:
    return [m["name"] for m in posts.to(cid) if m["type"] == "work"]


def create(api: Api, **job: Any) -> str:
    answer = api.post(f"{SPACE}/jobs", {"name": "a", **job})
    assert answer.status == 200, answer
    return str(answer.body["id"])


# -- connecting -----------------------------------------------------------------------------


def test_a_token_in_the_header_or_as_a_subprotocol_lets_a_worker_in(rt: Runtime, admin_token: str) -> None:
    assert connect("c1", {"Authorization": f"Bearer {admin_token}"}) == {"statusCode": 200}
    # Where headers cannot be set: the token offered as a subprotocol; emit.v1 is answered.
    offered = {"Sec-WebSocket-Protocol": f"emit.v1, bearer.{admin_token}"}
    assert connect("c2", offered) == {"statusCode": 200, "headers": {"Sec-WebSocket-Protocol": "emit.v1"}}
    both = {"authorization": f"Bearer {admin_token}", "sec-websocket-protocol": "emit.v1"}
    assert connect("c3", both)["headers"] == {"Sec-WebSocket-Protocol": "emit.v1"}
    for cid in ("c1", "c2", "c3"):
        assert rt.db.get(connection_key(cid)) is not None


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 401, "Unauthenticated"),
        ({"Authorization": "Bearer emit_nope_nope"}, 401, "Unauthenticated"),
        ({"Sec-WebSocket-Protocol": "emit.v1, bearer.emit_x_y"}, 401, "Unauthenticated"),
        ({"Sec-WebSocket-Protocol": "chat, bearer.TOKEN"}, 400, "InvalidArgument"),
    ],
)
def test_a_handshake_without_a_valid_token_is_refused_saying_why(
    rt: Runtime, admin_token: str, headers: dict[str, str], status: int, code: str
) -> None:
    headers = {k: v.replace("TOKEN", admin_token) for k, v in headers.items()}
    answer = connect("c1", headers)
    assert answer["statusCode"] == status
    assert json.loads(answer["body"])["code"] == code
    assert rt.db.get(connection_key("c1")) is None


def test_a_token_that_may_not_work_is_refused(rt: Runtime) -> None:
    answer = connect("c1", {"Authorization": f"Bearer {mint(rt, ['create', 'read'])}"})
    assert answer["statusCode"] == 403
    assert json.loads(answer["body"]) == {
        "code": "PermissionDenied",
        "message": "the token may not work in any space",
    }


# -- listening ------------------------------------------------------------------------------


def test_listens_add_up(worker: Callable[..., str]) -> None:
    cid = worker("c1", ["a", "b"])
    assert listen(cid, "wk", ["c", "a"]) == {"type": "listening", "space": "wk", "names": ["a", "b", "c"]}
    assert listen(cid, "other", ["z"]) == {"type": "listening", "space": "other", "names": ["z"]}


def test_a_listen_is_checked_as_a_claim_is(rt: Runtime, worker: Callable[..., str]) -> None:
    limited = mint(rt, ["work"], ["wk"])
    cid = worker("c1", ["a"], token=limited)
    assert listen(cid, "elsewhere", ["a"]) == {
        "type": "error",
        "code": "PermissionDenied",
        "message": "the token may not work in space elsewhere",
    }
    too_many = [f"n{i}" for i in range(MAX_LISTEN_NAMES + 1)]
    assert listen(cid, "wk", too_many) == {
        "type": "error",
        "code": "InvalidArgument",
        "message": "names: 1 to 32 job names",
    }
    assert listen(cid, "wk", [f"n{i}" for i in range(MAX_LISTEN_NAMES)])["type"] == "listening"
    assert listen(cid, "wk", ["bad name"])["message"] == "names[0]: must be 1-128 of A-Z a-z 0-9 . _ : -"
    assert listen(cid, "Bad Space", ["a"])["code"] == "InvalidArgument"
    assert send(cid, "not json")["code"] == "InvalidArgument"
    assert send(cid, {"action": "subscribe"})["message"].startswith("action: send")


def test_a_connection_listens_to_at_most_256_names(worker: Callable[..., str]) -> None:
    cid = worker("c1", ["a"])
    for n in range(7):  # 1 + 7 x 32 = 225
        assert listen(cid, "wk", [f"s{n}-{i}" for i in range(32)])["type"] == "listening"
    assert listen(cid, "wk", [f"t{i}" for i in range(31)])["type"] == "listening"  # 256
    refused = listen(cid, "wk", ["one-more"])
    assert refused["message"] == "names: a connection listens to at most 256 names in all"


def test_an_unknown_connection_or_a_revoked_token_may_not_listen(
    rt: Runtime, api: Api, worker: Callable[..., str]
) -> None:
    assert listen("nobody", "wk", ["a"])["code"] == "Unauthenticated"
    token = mint(rt, ["work"])
    cid = worker("c1", ["a"], token=token)
    token_id = token.split("_")[1]
    assert api.delete(f"/v1/tokens/{token_id}").status == 204
    assert listen(cid, "wk", ["b"]) == {
        "type": "error",
        "code": "Unauthenticated",
        "message": "the connection's token was revoked: connect again with another",
    }


# -- hints ----------------------------------------------------------------------------------


def test_a_created_job_hints_the_workers_listening_to_its_name(
    api: Api, bg: Background, posts: Recorder, worker: Callable[..., str]
) -> None:
    a, b = worker("ca", ["a"]), worker("cb", ["b"])
    elsewhere = worker("cx", ["a"], space="other")
    create(api, name="a")
    bg.stream()
    assert posts.to(a) == [{"type": "work", "space": "wk", "name": "a"}]
    assert posts.to(b) == posts.to(elsewhere) == []


def test_a_released_job_hints_again(
    api: Api, clock: ManualClock, bg: Background, posts: Recorder, worker: Callable[..., str]
) -> None:
    cid = worker("c1", ["a"])
    job = create(api)
    bg.stream()
    assert api.claimed(SPACE) == [job]
    clock.advance(HINT_EVERY_MS)
    bg.stream()  # the claim: nothing to hint
    assert hints(posts, cid) == ["a"]
    report = {"id": job, "attempt": 1, "release": {}}
    assert api.post(f"{SPACE}/jobs:report", report).body["outcomes"] == [{"status": "PENDING"}]
    bg.stream()
    assert hints(posts, cid) == ["a", "a"]


def test_a_retried_job_hints_when_its_backoff_ends(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    cid = worker("c1", ["a"])
    job = create(api, backoffMs=2_000)
    bg.stream()
    api.claimed(SPACE)
    clock.advance(HINT_EVERY_MS)
    outcome = api.post(f"{SPACE}/jobs:report", {"id": job, "attempt": 1, "fail": {"error": "x"}})
    assert outcome.body["outcomes"] == [{"status": "PENDING"}]
    bg.stream()
    assert hints(posts, cid) == ["a"], "not claimable for 2 s: no hint yet"
    assert fire_due(rt) == 0
    clock.advance(2_000)
    assert fire_due(rt) == 1
    assert hints(posts, cid) == ["a", "a"]
    assert api.claimed(SPACE) == [job]


def test_a_job_made_by_a_retry_request_hints(
    api: Api, clock: ManualClock, bg: Background, posts: Recorder, worker: Callable[..., str]
) -> None:
    job = create(api, maxAttempts=1)
    api.claimed(SPACE)
    api.post(f"{SPACE}/jobs:report", {"id": job, "attempt": 1, "fail": {}})
    bg.stream()
    cid = worker("c1", ["a"])
    clock.advance(HINT_EVERY_MS)
    assert api.post(f"{SPACE}/jobs:retry", {"ids": [job]}).status == 200
    bg.stream()
    assert hints(posts, cid) == ["a"]


def test_a_long_delay_is_the_clocks_to_hint_when_it_ends(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    """Past `LATER_HORIZON_MS` the stream files it in the timer book, at the end of the
    clock's tick the delay ends in: the tick past it hints, and no tick before."""
    cid = worker("c1", ["a"])
    create(api, delayMs=3_600_000)
    bg.stream()
    assert hints(posts, cid) == [] and len(rt.wake.later) == 0
    clock.advance(3_600_000 - 1_000)
    bg.tick()
    assert hints(posts, cid) == []
    clock.advance(2_000)
    bg.tick()
    assert hints(posts, cid) == ["a"]
    clock.advance(60_000)
    bg.tick()
    assert hints(posts, cid) == ["a"], "hinted once"


def test_a_short_delay_hints_when_it_ends(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    cid = worker("c1", ["a"])
    create(api, delayMs=5_000)
    bg.stream()
    assert hints(posts, cid) == []
    clock.advance(5_000)
    fire_due(rt)
    assert hints(posts, cid) == ["a"]


def test_a_resumed_name_is_hinted_once_claims_see_its_policy(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    """The policy's write puts the hint off until every process's cached policies have
    expired (on AWS to `wake_later`): a worker hinted sooner could claim from a process that
    still sees the name paused."""
    assert api.patch(f"{SPACE}/names/a/policy", {"paused": True}).status == 200
    job = create(api)
    bg.stream()
    cid = worker("c1", ["a"])
    clock.advance(HINT_EVERY_MS)
    assert api.patch(f"{SPACE}/names/a/policy", {"agingIntervalMs": 60_000}).status == 200
    assert len(rt.wake.later) == 0, "still paused: nothing to hint"
    assert api.patch(f"{SPACE}/names/a/policy", {"paused": False}).status == 200
    assert hints(posts, cid) == [] and len(rt.wake.later) == 1
    clock.advance(rt.policies.cache_ms - 1)
    assert fire_due(rt) == 0
    clock.advance(1)
    assert fire_due(rt) == 1
    assert hints(posts, cid) == ["a"]
    assert api.claimed(SPACE) == [job]


def test_a_name_reset_out_of_its_pause_is_hinted(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    assert api.patch(f"{SPACE}/names/a/policy", {"paused": True}).status == 200
    create(api)
    bg.stream()
    cid = worker("c1", ["a"])
    clock.advance(HINT_EVERY_MS)
    assert api.post(f"{SPACE}/names/a/policy:reset", {}).status == 200
    clock.advance(rt.policies.cache_ms)
    assert fire_due(rt) == 1
    assert hints(posts, cid) == ["a"]


def test_a_space_resumed_hints_its_names_at_the_clocks_next_tick(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    """The space's own pause lifted: each name not paused itself is hinted by the clock (one
    filing for all of them), once claims see the policy; a name still paused is not."""
    assert api.patch(SPACE, {"policy": {"paused": True}}).status == 200
    assert api.patch(f"{SPACE}/names/b/policy", {"paused": True}).status == 200
    create(api, name="a")
    create(api, name="b")
    bg.stream()
    cid = worker("c1", ["a", "b"])
    clock.advance(HINT_EVERY_MS)
    assert api.patch(SPACE, {"policy": {"paused": False}}).status == 200
    assert hints(posts, cid) == []
    clock.advance(HINT_EVERY_MS)
    bg.tick()
    assert hints(posts, cid) == ["a"]


def test_a_raised_concurrency_gives_a_waiting_job_room_and_hints(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    assert api.patch(f"{SPACE}/names/a/policy", {"concurrency": 1}).status == 200
    clock.advance(rt.policies.cache_ms)
    assert fire_due(rt) == 1, "that write's own hint, to nobody"
    first, second = create(api), create(api)
    bg.stream()
    assert api.claimed(SPACE, count=2) == [first]
    cid = worker("c1", ["a"])
    clock.advance(HINT_EVERY_MS)
    assert api.patch(f"{SPACE}/names/a/policy", {"concurrency": 2}).status == 200
    clock.advance(rt.policies.cache_ms)
    assert fire_due(rt) == 1
    assert hints(posts, cid) == ["a"]
    assert api.claimed(SPACE, count=2) == [second]


# -- room freed: a running job of a limited name (or key) lets go of its slot ---------------


def _finish(api: Api, job: str, how: str) -> None:
    ending = {"complete": {"complete": {}}, "release": {"release": {}}, "fail": {"fail": {"error": "x"}}}
    report = {"id": job, "attempt": 1, **ending[how]}
    assert api.post(f"{SPACE}/jobs:report", report).status == 200


@pytest.mark.parametrize("how", ["complete", "fail", "release"])
@pytest.mark.parametrize("limit", ["concurrency", "perKeyConcurrency"])
def test_a_running_job_that_lets_its_slot_go_hints_the_jobs_waiting_for_it(
    api: Api,
    clock: ManualClock,
    bg: Background,
    rt: Runtime,
    posts: Recorder,
    worker: Callable[..., str],
    limit: str,
    how: str,
) -> None:
    """A name's `concurrency` of 1, or a key's (`perKeyConcurrency`, 1 by default): the
    second job waits for the first's slot, and is hinted when it goes, however it goes (a
    failure retried after a long backoff frees the slot at once)."""
    keyed: dict[str, Any] = {}
    if limit == "concurrency":
        assert api.patch(f"{SPACE}/names/a/policy", {"concurrency": 1}).status == 200
    else:
        keyed = {"concurrencyKey": "customer-7"}
    first = create(api, backoffMs=3_600_000, **keyed)
    second = create(api, **keyed)
    bg.stream()
    assert api.claimed(SPACE, count=2) == [first]
    cid = worker("c1", ["a"])
    clock.advance(HINT_EVERY_MS)
    _finish(api, first, how)
    bg.stream()
    assert hints(posts, cid) == ["a"], "the slot was let go: the waiting job may be claimed"
    claimed = api.claimed(SPACE, count=2)
    if how == "release":  # both wait now, for the one slot
        assert len(claimed) == 1 and claimed[0] in (first, second)
    else:
        assert claimed == [second]


def test_a_finished_job_of_a_name_without_limits_reads_and_hints_nothing(
    api: Api,
    clock: ManualClock,
    bg: Background,
    rt: Runtime,
    posts: Recorder,
    worker: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its job held no slot: nothing waited for it, and its record costs wake no read."""
    job = create(api)
    bg.stream()
    assert api.claimed(SPACE) == [job]
    cid = worker("c1", ["a"])
    looks: list[str] = []
    original = rt.wake.store.listeners

    def counted(space: str, name: str, now_ms: int) -> list[str]:
        looks.append(name)
        return original(space, name, now_ms)

    monkeypatch.setattr(rt.wake.store, "listeners", counted)
    clock.advance(HINT_EVERY_MS)
    _finish(api, job, "complete")
    bg.stream()
    assert looks == [] and hints(posts, cid) == []


def test_a_name_nobody_listens_to_costs_no_write(
    api: Api, bg: Background, rt: Runtime, posts: Recorder
) -> None:
    create(api)
    bg.stream()
    assert rt.db.get({"pk": "WH#wk#a", "sk": "-"}) is None
    assert posts.posts == []


def test_a_name_nobody_listens_to_costs_one_read_a_batch_and_a_later_listen_is_heard(
    api: Api,
    bg: Background,
    rt: Runtime,
    posts: Recorder,
    worker: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks: list[str] = []
    original = rt.wake.store.listeners

    def counted(space: str, name: str, now_ms: int) -> list[str]:
        looks.append(name)
        return original(space, name, now_ms)

    monkeypatch.setattr(rt.wake.store, "listeners", counted)
    assert api.post(f"{SPACE}/jobs", [{"name": "a"} for _ in range(20)]).status == 200
    bg.stream()
    assert looks == ["a"], "one look for the whole batch"
    cid = worker("c1", ["a"])
    create(api)
    bg.stream()
    assert hints(posts, cid) == ["a"], "the next batch looks again"


# -- coalescing -----------------------------------------------------------------------------


def test_hints_are_coalesced_to_one_a_second_and_the_held_back_one_still_goes(
    api: Api, clock: ManualClock, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    cid = worker("c1", ["a"])
    for _ in range(20):
        create(api)
    bg.stream()
    assert hints(posts, cid) == ["a"]
    clock.advance(HINT_EVERY_MS - 1)
    assert fire_due(rt) == 0
    clock.advance(1)
    assert fire_due(rt) == 1, "the second's end: the jobs held back are hinted"
    assert hints(posts, cid) == ["a", "a"]
    clock.advance(10 * HINT_EVERY_MS)
    assert fire_due(rt) == 0 and hints(posts, cid) == ["a", "a"], "nothing more was held back"


def test_a_busy_name_costs_about_one_hint_a_second_not_one_a_job(
    rt: Runtime, posts: Recorder, worker: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """10,000 jobs in a second: one post per listener, two calls to the table, one put off."""
    cids = [worker(f"c{i}", ["a"]) for i in range(3)]
    calls: list[str] = []
    store = rt.wake.store
    for method in ("listeners", "mark"):
        original = getattr(store, method)

        def counted(*args: Any, _name: str = method, _call: Any = original, **kwargs: Any) -> Any:
            calls.append(_name)
            return _call(*args, **kwargs)

        monkeypatch.setattr(store, method, counted)
    for _ in range(10_000):
        rt.wake.hint("wk", "a")
    assert calls == ["listeners", "mark"]
    assert [hints(posts, cid) for cid in cids] == [["a"]] * 3
    assert len(rt.wake.later) == 1


def test_processes_that_hint_at_once_let_one_hint_through(
    rt: Runtime, clock: ManualClock, posts: Recorder, worker: Callable[..., str]
) -> None:
    """Two stream functions (processes with their own memory) share the name's hint item."""
    cid = worker("c1", ["a"])
    other = Wake(
        clock=clock, store=ListenerStore(rt.db), tokens=rt.tokens, url=None, poster=posts, later=HeldLater()
    )
    rt.wake.hint("wk", "a")
    other.hint("wk", "a")
    assert hints(posts, cid) == ["a"]
    assert isinstance(other.later, HeldLater) and len(other.later) == 1, "held back there: put off"
    clock.advance(HINT_EVERY_MS)
    for space, name, trailing in other.later.due(clock.now_ms()):
        other.later_due(space, name, trailing=trailing)
    assert hints(posts, cid) == ["a", "a"]


# -- going away -----------------------------------------------------------------------------


def test_disconnect_removes_the_connection_and_its_listens(
    api: Api, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    cid = worker("c1", ["a", "b"])
    listen(cid, "other", ["c"])
    assert invoke(BY_KEY["$disconnect"], event(BY_KEY["$disconnect"], cid)) == {"statusCode": 200}
    assert rt.db.get(connection_key(cid)) is None
    for space, name in (("wk", "a"), ("wk", "b"), ("other", "c")):
        assert rt.db.query("pk = :pk", vals={":pk": listen_partition(space, name)})[0] == []
    create(api)
    bg.stream()
    assert posts.posts == []
    assert invoke(BY_KEY["$disconnect"], event(BY_KEY["$disconnect"], cid)) == {"statusCode": 200}


def test_a_gone_connection_loses_its_records_and_a_failing_post_is_dropped(
    api: Api, bg: Background, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    gone, broken, fine = worker("gone", ["a"]), worker("broken", ["a"]), worker("fine", ["a"])
    posts.gone.add(gone)
    posts.broken.add(broken)
    create(api)
    bg.stream()  # nothing raised into the stream
    assert hints(posts, fine) == ["a"]
    assert rt.db.get(connection_key(gone)) is None
    assert rt.db.get(connection_key(broken)) is not None, "a failed post is only dropped"
    assert rt.wake.store.listeners("wk", "a", rt.clock.now_ms()) == sorted([broken, fine])


def test_records_past_their_time_are_skipped_before_ttl_removes_them(
    api: Api, clock: ManualClock, rt: Runtime, posts: Recorder, worker: Callable[..., str]
) -> None:
    cid = worker("c1", ["a"])
    clock.advance(wake_module.RECORD_MS)
    rt.wake.hint("wk", "a")
    assert posts.posts == []
    assert listen(cid, "wk", ["b"])["code"] == "Unauthenticated"


# -- apart from the stream ------------------------------------------------------------------


@dataclass
class Handed:
    """A `Sender` that keeps what it is handed: the stream's part ends there."""

    sent: list[tuple[list[str], bytes]] = field(default_factory=list)

    def send(self, connections: list[str], data: bytes) -> None:
        self.sent.append((list(connections), data))


def test_the_stream_hands_a_hints_posts_over_and_wake_later_makes_them(
    rt: Runtime, api: Api, bg: Background, posts: Recorder, worker: Callable[..., str]
) -> None:
    """On AWS the stream's posts go to `wake_later` (`LambdaSender`): a space with many (or
    slow) listeners costs the stream one invocation a hint, not the posts' time."""
    handed = Handed()
    rt.wake.sender = handed
    a, b = worker("ca", ["a"]), worker("cb", ["a"])
    create(api, name="a")
    bg.stream()
    assert posts.posts == [], "the stream made no post itself"
    [(connections, data)] = handed.sent
    assert sorted(connections) == sorted([a, b])
    answer = wake_later({"post": connections, "data": data.decode()}, LambdaContext("wake_later", 30, 128))
    assert answer == {"posted": 2}
    assert posts.to(a) == posts.to(b) == [{"type": "work", "space": "wk", "name": "a"}]


def test_a_hint_wake_later_holds_back_goes_out_when_the_second_ends(
    rt: Runtime, clock: ManualClock, posts: Recorder, worker: Callable[..., str]
) -> None:
    """wake_later puts nothing off to another function: a hint it holds back (another process
    hinted the name within its second) is sent by the same invocation when the second ends."""
    cid = worker("c1", ["a"])
    other = Wake(
        clock=clock, store=ListenerStore(rt.db), tokens=rt.tokens, url=None, poster=posts, later=HeldLater()
    )
    other.hint("wk", "a")
    assert hints(posts, cid) == ["a"]
    hint = {"space": "wk", "name": "a", "atMs": clock.now_ms(), "trailing": False}
    assert wake_later(hint, LambdaContext("wake_later", 30, 128)) == {"hinted": True}
    assert hints(posts, cid) == ["a", "a"], "held back, then sent as its second ended"
    assert len(rt.wake.later) == 0, "nothing left held in the process"
