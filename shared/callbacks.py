"""Callbacks: what is POSTed when a job finishes, how it is signed, where it may go, and
how often it is tried.

A delivery is tried as soon as the stream shows the job finished, then again after 5 s,
doubling to at most an hour apart, until a day has passed since the first try. Any
answer but 2xx, or none within 10 s in all, is a failed try. One sender holds an
attempt at a time; one that crashes mid-send lets its hold run out, and the attempt is
made again (at least once, where a crash leaves no record).

Sending is work of its own: the stream and the clock only hand due deliveries to an
`Outbox` (`shared.outbox`: an SQS queue read by the sender function on AWS, `emit dev`'s
own sender threads locally), so a target that never answers holds up its own space's
deliveries, never the stream's records or the clock's ticks.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import re
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from shared import limits
from shared.clock import Clock
from shared.errors import InvalidArgument
from shared.machine import Job, JobStatus
from shared.spaces import SpaceSettings
from shared.store.deliveries import DeliveryStore
from shared.store.dynamo import Item
from shared.store.jobs import JobStore

FIRST_RETRY_MS = 5 * limits.SECOND_MS
MAX_RETRY_MS = limits.HOUR_MS
GIVE_UP_AFTER_MS = limits.DAY_MS
SEND_DEADLINE_S = 10.0
"""A try is over by then, whatever the target does: resolving its name, connecting, TLS,
sending the body and receiving the answer's status and headers, in all."""
HOLD_MS = 60 * limits.SECOND_MS
"""How long one sender holds an attempt: well past the send's deadline and the writes
around it, so two senders never hold one delivery at once."""
CONCURRENT_SENDS = 32
"""Sends in flight at once, per batch (one sender invocation's messages: at most ten from
SQS, or `emit dev`'s room for one space); the others wait for a slot before taking their hold."""
SIGNATURE_HEADER = "Emit-Signature"


def sign(secret: str, t_ms: int, body: bytes) -> str:
    """`t=<ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as the contract gives it."""
    digest = hmac.new(secret.encode(), f"{t_ms}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t_ms},v1={digest}"


def body(job: Job) -> bytes:
    """The callback's JSON body; the same bytes on every try of one delivery."""
    content: dict[str, Any] = {
        "jobId": job.id,
        "space": job.space,
        "name": job.name,
        "status": job.status.value.lower(),
        "attempt": job.attempt,
        "timestamp": job.finished_at_ms,
        "result": job.result if job.status == JobStatus.COMPLETED else job.error,
    }
    return json.dumps(content, separators=(",", ":")).encode()


def retry_wait_ms(attempts: int) -> int:
    """After the n-th failed try: 5 s, 10 s, 20 s, ... at most an hour."""
    return int(min(FIRST_RETRY_MS * 2 ** min(attempts - 1, 20), MAX_RETRY_MS))


Due = tuple[str, str] | tuple[str, str, Item]
"""A delivery to try: (space, job id), with the finished job's item when it is at hand."""


class Outbox(Protocol):
    """Where the stream and the clock hand over the deliveries they made due: the sender
    takes each one's hold before it sends, so a delivery handed over twice is sent once."""

    def submit(self, dues: Sequence[Due]) -> None: ...


class TargetRefused(Exception):
    """The callback's target is an address the service may not call."""


@dataclass(frozen=True)
class TargetPolicy:
    """Where callbacks may go. On AWS, never to loopback, private, link-local or metadata
    addresses (a job's creator must not reach into the service's network); `emit dev`
    allows them so a receiver on 127.0.0.1 works."""

    allow_private: bool = False
    resolve: Callable[[str], list[str]] = lambda host: sorted(
        {str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    )

    def check_url(self, url: str, *, at: str = "callback.url") -> None:
        """At create: the scheme, and a host that is plainly internal, however it is spelled."""
        try:
            parts = urlsplit(url)
            hostname = parts.hostname
        except ValueError:
            raise InvalidArgument(f"{at}: must be an http or https URL") from None
        host = (hostname or "").lower().rstrip(".")
        if parts.scheme not in ("http", "https") or not host:
            raise InvalidArgument(f"{at}: must be an http or https URL")
        if self.allow_private:
            return
        address = literal_address(host)
        if (
            host == "localhost"
            or host.endswith((".localhost", ".internal"))
            or (address is not None and _internal(address))
        ):
            raise InvalidArgument(f"{at}: may not be a loopback, private, link-local or metadata address")
        # Any other name is checked again, after DNS, when the callback is sent.

    def check_send(self, url: str) -> Pinned | None:
        """At send: every address the host resolves to must be public. Answers where to
        connect (the checked address itself, so a name that resolves differently a moment
        later cannot lead elsewhere); None where any target is allowed."""
        if self.allow_private:
            return None
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            addresses = self.resolve(host)
        except OSError as exc:
            raise TargetRefused(f"cannot resolve {host}: {exc}") from None
        if not addresses:
            raise TargetRefused(f"{host} has no address")
        for address in addresses:
            if _internal(ipaddress.ip_address(address.split("%")[0])):
                raise TargetRefused(f"{host} resolves to {address}, which callbacks may not reach")
        address = addresses[0].split("%")[0]
        netloc = f"[{address}]" if ":" in address else address
        if parts.port is not None:
            netloc += f":{parts.port}"
        return Pinned(parts._replace(netloc=netloc).geturl(), parts.netloc.rsplit("@", 1)[-1], host)


@dataclass(frozen=True)
class Pinned:
    """A callback sent to the address that was checked: the URL with that address, the
    Host header the URL named, and the name TLS checks the certificate against."""

    url: str
    host_header: str
    tls_name: str


Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_IPV4_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_TUNNELS = (ipaddress.ip_network("64:ff9b:1::/48"), ipaddress.ip_network("2001::/32"))
"""Local-use NAT64 (where the IPv4 address sits depends on the site) and Teredo (which
reaches an IPv4 host through a relay): neither names a host that can be checked."""


def literal_address(host: str) -> Address | None:
    """The address a URL's host spells, in every spelling resolvers accept: IPv6, dotted
    IPv4 and its shorthands (`127.1`, `0x7f000001`, `2130706433`, `0177.0.0.1`, `0`, as
    inet_aton reads them); None for a name."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 zone: fe80::1%eth0
    except ValueError:
        pass
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.fullmatch(part) for part in parts):
        return None
    numbers = [
        int(part[2:] or "0", 16) if part[:2].lower() == "0x" else int(part, 8 if part[0] == "0" else 10)
        for part in parts
    ]
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        return None
    return ipaddress.IPv4Address(sum(n << (24 - 8 * i) for i, n in enumerate(head)) + last)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries to its destination: mapped (`::ffff:a.b.c.d`),
    compatible (`::a.b.c.d`), translated (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::/96`) or
    6to4 (`2002::/16`)."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    value = int(ip)
    if value >> 32 in (0, 0xFFFF, 0xFFFF_0000) or ip in _NAT64:
        return ipaddress.IPv4Address(value & 0xFFFF_FFFF)
    return None


def _internal(ip: Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        if any(ip in tunnel for tunnel in _TUNNELS):
            return True
        carried = embedded_ipv4(ip)
        if carried is not None and _internal(carried):
            return True
    # Not global covers loopback, private, link-local (169.254.169.254, the metadata
    # service, among them), shared (100.64/10), reserved and unspecified addresses.
    return bool(not ip.is_global or ip.is_multicast or str(ip) == "fd00:ec2::254")


@dataclass(frozen=True)
class Held:
    """An attempt one sender holds: the delivery as taken, and the job to send (None:
    the job is gone) with its space's signing secret."""

    space: str
    job_id: str
    delivery: Item
    job: Job | None
    secret: str | None


class Dispatcher:
    """Makes delivery attempts and records what came of them.

    Sends run side by side in one event loop, each under a total deadline that cancels
    whatever it is blocked on (a name lookup, a connect, a TLS handshake, a target that
    drips its answer a byte at a time): a slow target holds up no other, and no send
    outlives the hold on its attempt, so two sends of one delivery never overlap."""

    def __init__(
        self,
        *,
        clock: Clock,
        jobs: JobStore,
        deliveries: DeliveryStore,
        settings: SpaceSettings,
        policy: TargetPolicy,
        transport: httpx.AsyncBaseTransport | None = None,
        send_deadline_s: float = SEND_DEADLINE_S,
    ) -> None:
        self.clock = clock
        self.jobs = jobs
        self.deliveries = deliveries
        self.settings = settings
        self.policy = policy
        self.transport = transport
        """None: the network; tests put a mock here."""
        self.send_deadline_s = send_deadline_s

    def dispatch_many(self, targets: Sequence[Due]) -> list[str]:
        """Try each delivery that is due, if nobody else holds it; answers their states.

        A target's third element is the finished job's item when the caller has it (the
        stream record that finished it carries it, and a finished job never changes);
        else it is read."""
        states: list[str] = []
        for outcome in self.dispatch_each(targets):
            if isinstance(outcome, BaseException):
                raise outcome  # after every other attempt has been made and recorded
            states.append(outcome)
        return states

    def dispatch_each(self, targets: Sequence[Due]) -> list[str | BaseException]:
        """Like `dispatch_many`, but answers each target's own outcome: its state, or the
        exception that kept its attempt from being made or recorded (the table failed)."""
        if not targets:
            return []
        loop = asyncio.new_event_loop()
        loop.set_default_executor(ThreadPoolExecutor(max_workers=16, thread_name_prefix="emit-callbacks"))
        try:
            return loop.run_until_complete(self._dispatch_all(targets))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            # Closing does not wait for a name lookup abandoned at its deadline (a thread
            # cannot be cancelled); asyncio.run would.
            loop.close()

    async def _dispatch_all(self, targets: Sequence[Due]) -> list[str | BaseException]:
        slots = asyncio.Semaphore(CONCURRENT_SENDS)
        async with httpx.AsyncClient(
            transport=self.transport, follow_redirects=False, timeout=self.send_deadline_s
        ) as client:
            return await asyncio.gather(
                *(self._dispatch(client, slots, target) for target in targets), return_exceptions=True
            )

    async def _dispatch(self, client: httpx.AsyncClient, slots: asyncio.Semaphore, target: Due) -> str:
        async with slots:  # the hold and the deadline start once a slot is free
            held = await asyncio.to_thread(self._take, *target)
            if held is None:
                return "NOT_DUE"
            status: int | None = None
            error: str | None = "the job no longer exists"
            if held.job is not None:
                status, error = await self._send(client, held.job, held.secret)
            return await asyncio.to_thread(self._record, held, status, error)

    def _take(self, space: str, job_id: str, job_item: Item | None = None) -> Held | None:
        """Hold the next attempt, with the job to send (None: not due, or held elsewhere)."""
        delivery = self.deliveries.take(space, job_id, self.clock.now_ms(), HOLD_MS)
        if delivery is None:
            return None
        item = job_item if job_item is not None else self.jobs.get_item(space, job_id)
        if item is None or item.get("callback") is None:
            return Held(space, job_id, delivery, None, None)
        job = self.jobs.load(space, item)
        return Held(space, job_id, delivery, job, self.settings.get(space).webhook_secret)

    def _record(self, held: Held, status: int | None, error: str | None) -> str:
        next_at: int | None = None
        if held.job is None:
            state = "GAVE_UP"
        elif status is not None and 200 <= status < 300:
            state = "DELIVERED"
        else:
            next_at = self.clock.now_ms() + retry_wait_ms(held.delivery["attempts"])
            state = "GAVE_UP" if next_at - held.delivery["firstAtMs"] > GIVE_UP_AFTER_MS else "PENDING"
        self.deliveries.record(
            held.space,
            held.job_id,
            attempt=held.delivery["attempts"],
            state=state,
            next_at_ms=next_at,
            status=status,
            error=error,
            now_ms=self.clock.now_ms(),
        )
        return state

    async def _send(
        self, client: httpx.AsyncClient, job: Job, secret: str | None
    ) -> tuple[int | None, str | None]:
        """One POST, over by the deadline whatever the target does. The answer's status
        decides; its body is not read."""
        assert job.callback is not None
        content = body(job)
        headers = dict(job.callback.headers)
        headers["Content-Type"] = "application/json"
        headers["User-Agent"] = "emit-callbacks/1"
        if secret:
            headers[SIGNATURE_HEADER] = sign(secret, self.clock.now_ms(), content)
        deadline = asyncio.timeout(self.send_deadline_s)
        try:
            async with deadline:
                url, extensions = job.callback.url, {}
                pinned = await asyncio.to_thread(self.policy.check_send, url)
                if pinned is not None:
                    url, headers["Host"] = pinned.url, pinned.host_header
                    extensions = {"sni_hostname": pinned.tls_name}
                async with client.stream(
                    "POST", url, content=content, headers=headers, extensions=extensions
                ) as answer:
                    status = answer.status_code
        except TargetRefused as refused:
            return None, str(refused)
        except Exception as exc:  # whatever the target did, it is a failed try, recorded
            if deadline.expired():
                return None, f"no answer within {self.send_deadline_s:g} s"
            return None, f"{type(exc).__name__}: {exc}"[:1000]
        if 200 <= status < 300:
            return status, None
        return status, f"answered {status}"
