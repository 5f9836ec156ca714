"""Wake: workers are told by push that work may be there, so none need hold a long poll.

The contract's "Waiting costs nothing". A worker connects to `wakeUrl` (an API Gateway
WebSocket API on AWS, `emit dev`'s own address locally) with its token, sends
`{"action": "listen", "space", "names"}` and is sent `{"type": "work", "space", "name"}`
when a job of a name it listens to may have become claimable. A hint is only that: the
worker then claims as usual, and still claims now and then in case a hint was lost.

The same code runs both places; only the wiring differs: how a message reaches a
connection (`Poster`: API Gateway's management API, or `emit dev`'s own server) and how a
hint is put off a moment (`Later`: an asynchronous invocation of `functions/wake_later.py`,
or a local heap a thread drains).

**Coalescing.** A name is hinted at most once a second (`HINT_EVERY_MS`), to every
connection listening to it. Each process remembers when it last hinted a name, so a burst
of 10,000 jobs a second costs it no read or write per job; across processes one
conditional write on the name's hint item (`ListenerStore.mark`) lets one of them through
each second. A hint held back this way is not dropped: the second's end is put off to
(`Later`), and a hint then goes out if none did meanwhile. That write is the only hot key:
at most about two writes a second for each process hinting the name (one let through, one
held back), so DynamoDB's 1,000 writes a second an item are never near.

**Bounded.** Hints never fail their caller (the stream goes on whatever happens here, a
missed hint costs a worker at most its next regular claim), and the stream never makes the
posts: it hands them to a `Sender` (`LambdaSender`: `functions/wake_later.py`, invoked
without waiting; `ThreadSender` under `emit dev`), so no space waits on another's
listeners. There posts run side by side, each bounded by the poster's timeouts, all of them
by `SEND_BUDGET_S`; a post that fails is dropped, and one answered "gone" (410) removes the
connection's records.
"""

from __future__ import annotations

import heapq
import json
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import ClientError

from shared import limits
from shared.auth import Caller, Tokens
from shared.clock import Clock
from shared.errors import EmitError, InvalidArgument, PermissionDenied, Unauthenticated
from shared.observability import logger
from shared.schema import NAME_PATTERN, NAME_RULE, SPACE_PATTERN, SPACE_RULE
from shared.store.port import Connection, ConnectionGone, JobChange, ListenerStorePort

PROTOCOL = "emit.v1"
"""The subprotocol a client offers (`Sec-WebSocket-Protocol: emit.v1`) and is answered."""
BEARER = "bearer."
"""A token offered as a subprotocol, where a client cannot set headers: `bearer.<token>`."""
HINT_EVERY_MS = limits.SECOND_MS
"""At most one hint a second per connection and name (the contract's coalescing)."""
MAX_LISTEN_NAMES = limits.MAX_CLAIM_NAMES
"""Names one `listen` may name: as many as a claim may."""
MAX_LISTENS = 256
"""Names one connection may listen to in all, over its spaces (each a small item, and a
line of the connection's item, which must stay far under DynamoDB's 400 KB)."""
CONNECTION_MS = 2 * limits.HOUR_MS
"""API Gateway ends a WebSocket connection after 2 hours, whatever it does."""
RECORD_MS = CONNECTION_MS + limits.HOUR_MS
"""How long a connection's records are kept (their TTL): an hour past the longest
connection, for a `$disconnect` that never came."""
HINTED_MS = limits.DAY_MS
"""A name's last-hinted item outlives its second by a day, then TTL takes it."""
LATER_HORIZON_MS = 15 * limits.SECOND_MS
"""A job ready within this long (a short delay, a retry's first backoffs) is hinted when it
becomes ready, by `Later`; a later one by the clock, when it becomes due (`hint`)."""
POST_THREADS = 16
SEND_BUDGET_S = 5.0
"""The longest one hint's posts may take in all; the rest are dropped."""
RECENT_ENTRIES = 10_000
"""Names a process remembers having hinted (it forgets them all when full)."""


class Gone(Exception):
    """The connection no longer exists (API Gateway's 410)."""


class Poster(Protocol):
    """Sends one message to one connection; raises `Gone` when it no longer exists."""

    def post(self, connection_id: str, data: bytes) -> None: ...


class Sender(Protocol):
    """Sends one hint to its listeners somewhere apart from the caller (`Wake.post_all`
    there): the stream and the clock, which every space shares, never wait on the posts."""

    def send(self, connections: list[str], data: bytes) -> None: ...


class Later(Protocol):
    """Calls `Wake.later_due(space, name, trailing)` at about `at_ms` (a little after is fine)."""

    def at(self, space: str, name: str, at_ms: int, *, trailing: bool) -> None: ...


@dataclass(frozen=True)
class Route:
    """A WebSocket route: its key and the module in `functions/` that serves it (None: the
    gateway answers it itself, with nothing: a keep-alive)."""

    key: str
    function: str | None


ROUTE_SELECTION = "$request.body.action"
ROUTES: tuple[Route, ...] = (
    Route("$connect", "wake_connect"),
    Route("$disconnect", "wake_disconnect"),
    Route("listen", "wake_listen"),
    # Anything else: an error saying what is understood.
    Route("$default", "wake_listen"),
    # A client's keep-alive (API Gateway closes a connection idle for 10 minutes): no function.
    Route("ping", None),
)


def route_of(body: str) -> Route:
    """The route a message takes, as API Gateway selects it by its `action`."""
    try:
        action = json.loads(body).get("action")
    except (ValueError, AttributeError):
        action = None
    by_key = {route.key: route for route in ROUTES}
    return by_key.get(action, by_key["$default"]) if isinstance(action, str) else by_key["$default"]


def work(space: str, name: str) -> bytes:
    """The hint itself."""
    return json.dumps({"type": "work", "space": space, "name": name}, separators=(",", ":")).encode()


def error(exc: EmitError) -> dict[str, Any]:
    """How a refused message is answered on the connection."""
    return {"type": "error", "code": exc.code, "message": exc.message}


def offered(headers: Mapping[str, str]) -> tuple[list[str], str | None]:
    """The subprotocols a handshake offers, and the token among them (`bearer.<token>`)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    protocols = [p.strip() for p in lowered.get("sec-websocket-protocol", "").split(",") if p.strip()]
    token = next((p.removeprefix(BEARER) for p in protocols if p.startswith(BEARER)), None)
    return [p for p in protocols if not p.startswith(BEARER)], token


@dataclass
class _Hinted:
    at_ms: int
    deferred: bool


class Wake:
    """Connections, listens and hints (see the module's docstring)."""

    def __init__(
        self,
        *,
        clock: Clock,
        store: ListenerStorePort,
        tokens: Tokens,
        url: str | None,
        poster: Poster | None = None,
        later: Later | None = None,
        sender: Sender | None = None,
    ) -> None:
        self.clock = clock
        self.store = store
        self.tokens = tokens
        self.url = url
        """`wakeUrl`: where workers connect (None: no wake here)."""
        self.poster = poster
        self.later = later
        self.sender = sender
        """Where a hint's posts are made (None: here, bounded by `SEND_BUDGET_S`)."""
        self._hinted: dict[tuple[str, str], _Hinted] = {}
        self._soon: set[tuple[str, str, int]] = set()
        self._unheard: set[tuple[str, str]] = set()
        """Names found without listeners in this stream batch (`new_batch`)."""
        self._lock = threading.Lock()

    def shown(self) -> dict[str, str]:
        """`wakeUrl` as a space's and a claim's answers show it: left out without a wake."""
        return {"wakeUrl": self.url} if self.url else {}

    # -- the connection's routes ----------------------------------------------------------

    def connect(self, connection_id: str, headers: Mapping[str, str]) -> str | None:
        """Let a connection in if its token may work somewhere: the subprotocol to answer
        (`emit.v1` when offered, None when none was)."""
        protocols, offered_token = offered(headers)
        if (protocols or offered_token) and PROTOCOL not in protocols:
            raise InvalidArgument(f"Sec-WebSocket-Protocol: offer {PROTOCOL} (and bearer.<token> if need be)")
        authorization = {k.lower(): v for k, v in headers.items()}.get("authorization")
        if not authorization and offered_token:
            authorization = f"Bearer {offered_token}"
        caller = self.tokens.authenticate(authorization)
        if "work" not in caller.scopes and "admin" not in caller.scopes:
            raise PermissionDenied("the token may not work in any space")
        now = self.clock.now_ms()
        record = {
            "token": caller.token_id,
            "scopes": sorted(caller.scopes),
            "spaces": sorted(caller.spaces) if caller.spaces is not None else None,
        }
        self.store.open(connection_id, record, now_ms=now, until_ms=now + RECORD_MS)
        return PROTOCOL if protocols else None

    def listen(self, connection_id: str, body: str | None) -> dict[str, Any]:
        """Add a listen to the connection: `{"type": "listening", "space", "names"}`, the
        names it now listens to in that space."""
        space, names = _listen_request(body)
        now = self.clock.now_ms()
        connection = self.store.connection(connection_id, now)
        if connection is None:
            raise Unauthenticated("the connection is not known (or too old): connect again")
        self.tokens.permit(self._caller(connection), "work", space)
        wanted = connection.listens | {(space, name) for name in names}
        if len(wanted) > MAX_LISTENS:
            raise InvalidArgument(f"names: a connection listens to at most {MAX_LISTENS} names in all")
        try:
            self.store.add(connection_id, space, names, until_ms=connection.connected_at_ms + RECORD_MS)
        except ConnectionGone:
            raise Unauthenticated("the connection is gone: connect again") from None
        return {"type": "listening", "space": space, "names": sorted(n for s, n in wanted if s == space)}

    def disconnect(self, connection_id: str) -> None:
        self.store.close(connection_id)

    def _caller(self, connection: Connection) -> Caller:
        """The connection's caller, if its token still stands (a revoked token listens no more)."""
        token = connection.token
        if token != "dev" and self.tokens.store.get(token, consistent=False) is None:
            raise Unauthenticated("the connection's token was revoked: connect again with another")
        return Caller(token, connection.scopes, connection.spaces)

    # -- hints ----------------------------------------------------------------------------

    def new_batch(self) -> None:
        """A batch of stream records begins. A name found without listeners stays so for the
        rest of a batch: each of its records was written before the batch was read, so before
        that look, and a worker that listens after it claims after it, finding those jobs. So
        a name nobody listens to costs one read a batch, not one a job."""
        with self._lock:
            self._unheard.clear()

    def changed(self, change: JobChange) -> None:
        """A job changed (the stream's record): hint its name if the job became claimable
        (created, released, retried), now or, within `LATER_HORIZON_MS`, when it does; and
        now if it let go of a slot of its name's or its key's concurrency (finished,
        released, retried, expired: a job waiting for that room may be claimable). Both are
        read from the record's images: no read for a job of a name without limits."""
        space = change.space
        try:
            now = self.clock.now_ms()
            became = change.became_claimable(now)
            freed = change.freed_room
            if freed is not None:
                self._hint_now(space, freed)
            if became is None:
                return
            name, ready = became
            if ready <= now and name != freed:
                self._hint_now(space, name)
            elif now < ready <= now + LATER_HORIZON_MS and not self._unheard_in_batch(space, name):
                self._soon_ready(space, name, ready)
        except Exception:  # a hint is worth less than the stream it rides on
            logger.exception("wake: a hint failed", extra={"action": "wake", "space": space})

    def _hint_now(self, space: str, name: str) -> None:
        """A stream record's hint now, unless this batch found nobody listening to the name."""
        if not self._unheard_in_batch(space, name):
            self._hint(space, name, defer=True, batch=True)

    def _unheard_in_batch(self, space: str, name: str) -> bool:
        with self._lock:
            return (space, name) in self._unheard

    def policy_written(self, space: str, name: str, *, paused: bool, seen_by_ms: int) -> None:
        """A name's policy was written (resumed, a limit raised or lifted, reset): its
        waiting jobs may be claimable once claims see the policy, by `seen_by_ms` (when
        every process's cached copy has expired). Hinted then, put off (`Later`: on AWS
        `wake_later`, invoked without waiting), so the writer reads nothing and waits on
        no post; a name still paused is not hinted."""
        if paused:
            return
        try:
            self._defer(space, name, seen_by_ms, trailing=False)
        except Exception:  # the write stands whatever happens here
            logger.exception("wake: a policy's hint failed", extra={"action": "wake", "space": space})

    def hint(self, space: str, name: str, *, defer: bool = True) -> None:
        """Hint every connection listening to `name` in `space` that work may be there: at
        most once a second (a hint held back by that goes out when the second ends, unless
        `defer` is False: for a hint that was itself put off). The clock calls this when a
        delay or a backoff past `LATER_HORIZON_MS` ends (a resumed name is hinted by
        `policy_written`, room a job let go of by `changed`)."""
        self._hint(space, name, defer=defer, batch=False)

    def _hint(self, space: str, name: str, *, defer: bool, batch: bool) -> None:
        now = self.clock.now_ms()
        key = (space, name)
        with self._lock:
            hinted = self._hinted.get(key)
            if hinted is not None and now < hinted.at_ms + HINT_EVERY_MS:
                if defer and not hinted.deferred:
                    hinted.deferred = True
                    self._defer(space, name, hinted.at_ms + HINT_EVERY_MS, trailing=True)
                return
        listeners = self.store.listeners(space, name, now)
        if not listeners:
            if batch:
                with self._lock:
                    self._unheard.add((space, name))
            return
        last = self.store.mark(space, name, now_ms=now, every_ms=HINT_EVERY_MS, until_ms=now + HINTED_MS)
        with self._lock:
            if len(self._hinted) >= RECENT_ENTRIES:
                self._hinted.clear()
            self._hinted[key] = _Hinted(now if last is None else last, deferred=last is not None and defer)
        if last is not None:  # another process hinted within the second
            if defer:
                self._defer(space, name, last + HINT_EVERY_MS, trailing=True)
            return
        if self.sender is not None:
            self.sender.send(listeners, work(space, name))
        else:
            self.post_all(listeners, work(space, name))

    def later_due(self, space: str, name: str, *, trailing: bool) -> None:
        """A hint put off (`Later`) is due: a held-back one goes out now unless another did
        since (which covers it); a job that became ready is hinted as any other."""
        try:
            self.hint(space, name, defer=not trailing)
        except Exception:
            logger.exception("wake: a hint put off failed", extra={"action": "wake", "space": space})

    def _soon_ready(self, space: str, name: str, ready_ms: int) -> None:
        """Hint when a job becomes ready, if anyone listens (once a second per name)."""
        second = ready_ms // limits.SECOND_MS
        with self._lock:
            if (space, name, second) in self._soon:
                return
            if len(self._soon) >= RECENT_ENTRIES:
                self._soon.clear()
            self._soon.add((space, name, second))
        if self.store.listeners(space, name, self.clock.now_ms()):
            self._defer(space, name, ready_ms, trailing=False)
        else:
            with self._lock:
                self._unheard.add((space, name))

    def _defer(self, space: str, name: str, at_ms: int, *, trailing: bool) -> None:
        if self.later is not None:
            self.later.at(space, name, at_ms, trailing=trailing)

    def post_all(self, connections: list[str], data: bytes) -> None:
        """Post `data` to each of `connections`, side by side, within `SEND_BUDGET_S` in all."""
        if self.poster is None:
            return
        if len(connections) == 1:
            self._post(connections[0], data)
            return
        pool = ThreadPoolExecutor(max_workers=min(POST_THREADS, len(connections)), thread_name_prefix="wake")
        try:
            futures = [pool.submit(self._post, connection, data) for connection in connections]
            _, late = wait(futures, timeout=SEND_BUDGET_S)
            if late:
                logger.warning("wake: posts dropped, past the budget", extra={"dropped": len(late)})
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _post(self, connection_id: str, data: bytes) -> None:
        poster = self.poster
        assert poster is not None
        try:
            poster.post(connection_id, data)
        except Gone:
            self.store.close(connection_id)
        except Exception:  # dropped: the worker claims anyway, now and then
            logger.exception("wake: a post failed", extra={"action": "wake", "connection": connection_id})


def _listen_request(body: str | None) -> tuple[str, list[str]]:
    """The space and names of a listen message, checked as a claim checks them."""
    try:
        message = json.loads(body or "")
    except ValueError:
        message = None
    if not isinstance(message, dict) or message.get("action") != "listen":
        raise InvalidArgument('action: send {"action": "listen", "space": "...", "names": [...]} (or "ping")')
    space, names = message.get("space"), message.get("names")
    if not isinstance(space, str) or not _SPACE(space):
        raise InvalidArgument(f"space: {SPACE_RULE}")
    if not isinstance(names, list) or not 1 <= len(names) <= MAX_LISTEN_NAMES:
        raise InvalidArgument(f"names: 1 to {MAX_LISTEN_NAMES} job names")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not _NAME(name):
            raise InvalidArgument(f"names[{i}]: {NAME_RULE}")
    return space, names


def _matcher(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda value: compiled.fullmatch(value) is not None


_SPACE = _matcher(SPACE_PATTERN)
_NAME = _matcher(NAME_PATTERN)


# -- wiring: AWS and local ------------------------------------------------------------------


def management_endpoint(wake_url: str) -> str:
    """The connections' management endpoint of a WebSocket stage URL (same host and path)."""
    return "https://" + wake_url.split("://", 1)[1]


class ApiGatewayPoster:
    """Posts through API Gateway's management API (`@connections`), as `execute-api:ManageConnections`
    allows on this API's connections only. Its client is made at the first post: a function
    that only answers `wakeUrl` never makes one (a cold start's time)."""

    def __init__(self, make_client: Callable[[], Any]) -> None:
        self._make_client = make_client
        self._client: Any = None

    def post(self, connection_id: str, data: bytes) -> None:
        if self._client is None:
            self._client = self._make_client()
        try:
            self._client.post_to_connection(ConnectionId=connection_id, Data=data)
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if exc.response["Error"]["Code"] == "GoneException" or status == 410:
                raise Gone(connection_id) from None
            raise


class LambdaLater:
    """Puts a hint off by invoking `functions/wake_later.py` without waiting: it sleeps until
    then, and hints (a second at most, or a short delay's end: `LATER_HORIZON_MS`)."""

    def __init__(self, client: Any, function: str) -> None:
        self.client = client
        self.function = function

    def at(self, space: str, name: str, at_ms: int, *, trailing: bool) -> None:
        payload = {"space": space, "name": name, "atMs": at_ms, "trailing": trailing}
        self.client.invoke(FunctionName=self.function, InvocationType="Event", Payload=json.dumps(payload))


class LambdaSender:
    """Hands a hint's posts to `functions/wake_later.py`, invoked without waiting: a space
    with many listeners costs the stream one invocation a hint (a thousand connections an
    invocation), never the posts' time."""

    CONNECTIONS = 1_000
    """Connections an invocation posts to: its event stays far under Lambda's 256 KB."""

    def __init__(self, client: Any, function: str) -> None:
        self.client = client
        self.function = function

    def send(self, connections: list[str], data: bytes) -> None:
        for i in range(0, len(connections), self.CONNECTIONS):
            payload = {"post": connections[i : i + self.CONNECTIONS], "data": data.decode()}
            self.client.invoke(
                FunctionName=self.function, InvocationType="Event", Payload=json.dumps(payload)
            )


class ThreadSender:
    """`emit dev`'s: a hint's posts made by a thread of their own, so its stream reader
    never waits on them (as `LambdaSender` keeps them apart on AWS)."""

    def __init__(self, wake: Wake) -> None:
        self.wake = wake
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="emit-wake-send")

    def send(self, connections: list[str], data: bytes) -> None:
        self._pool.submit(self._post, connections, data)

    def _post(self, connections: list[str], data: bytes) -> None:
        try:
            self.wake.post_all(connections, data)
        except Exception:
            logger.exception("wake: a hint's posts failed", extra={"action": "wake"})


class HeldLater:
    """Hints put off, held in this process until their time (`emit dev`'s thread takes them;
    the tests take them by hand)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, str, str, bool]] = []
        self._lock = threading.Lock()
        self.on_submit: Callable[[], None] | None = None

    def at(self, space: str, name: str, at_ms: int, *, trailing: bool) -> None:
        with self._lock:
            heapq.heappush(self._heap, (at_ms, space, name, trailing))
        if self.on_submit is not None:
            self.on_submit()

    def due(self, now_ms: int) -> list[tuple[str, str, bool]]:
        """The hints due by `now_ms`, taken: (space, name, trailing)."""
        taken = []
        with self._lock:
            while self._heap and self._heap[0][0] <= now_ms:
                _, space, name, trailing = heapq.heappop(self._heap)
                taken.append((space, name, trailing))
        return taken

    def next_at(self) -> int | None:
        with self._lock:
            return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


def sleep_until(clock: Clock, at_ms: int, most_s: float) -> None:
    """Wait until `at_ms` by `clock`, at most `most_s` seconds."""
    pause = min(max(0, at_ms - clock.now_ms()) / 1000, most_s)
    if pause > 0:
        clock.sleep(pause)


# -- the routes' answers, as API Gateway reads a Lambda proxy integration's ----------------


def connect_answer(connection_id: str, headers: Mapping[str, str], wake: Wake) -> dict[str, Any]:
    """`$connect`: 200 (with the subprotocol chosen) lets the connection in; any other
    status refuses the handshake with it, the body saying why."""
    try:
        protocol = wake.connect(connection_id, headers)
    except EmitError as exc:
        return _refused(exc.status, {"code": exc.code, "message": exc.message})
    except Exception:
        logger.exception("wake: connect failed", extra={"action": "wake"})
        return _refused(500, {"code": "Internal", "message": "internal error; it has been logged"})
    if protocol is None:
        return {"statusCode": 200}
    return {"statusCode": 200, "headers": {"Sec-WebSocket-Protocol": protocol}}


def message_answer(connection_id: str, body: str | None, wake: Wake) -> dict[str, Any]:
    """A message (`listen`, or anything else): the answer sent back on the connection."""
    try:
        answer = wake.listen(connection_id, body)
    except EmitError as exc:
        answer = error(exc)
    except Exception:
        logger.exception("wake: listen failed", extra={"action": "wake"})
        answer = {"type": "error", "code": "Internal", "message": "internal error; it has been logged"}
    return {"statusCode": 200, "body": json.dumps(answer, separators=(",", ":"))}


def _refused(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"Content-Type": "application/json"}, "body": json.dumps(body)}
