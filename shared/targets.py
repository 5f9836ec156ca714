"""Where callbacks may go: the rules a job's callback address is checked by.

Value types and pure checks, apart from the sending (`shared.callbacks`): a create checks
its jobs' addresses with them (`shared.jobs.create`), a send checks again after DNS, and
neither needs the other's machinery. Kept on their own so that nothing a create imports
leads back to the sender.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from shared.errors import InvalidArgument


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
