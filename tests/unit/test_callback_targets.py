"""Where callbacks may go on AWS: every spelling of an internal address is refused, at
create (400 naming the field) and again at send (after DNS)."""

from __future__ import annotations

import pytest

from shared.errors import InvalidArgument
from shared.targets import TargetPolicy, TargetRefused

AWS = TargetPolicy(allow_private=False)

LOOPBACK_SPELLINGS = ["127.1", "0x7f000001", "2130706433", "0177.0.0.1", "0", "127.0.0.1.", "0x7f.1"]
EMBEDDING_IPV6 = [
    "::127.0.0.1",  # IPv4-compatible
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:0:7f00:1",  # IPv4-translated
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata service
    "64:ff9b:1::a00:1",  # local-use NAT64
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
]
PUBLIC = ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822", "2002:5db8:d822::1"]


def url(host: str) -> str:
    return f"https://[{host}]/hook" if ":" in host else f"https://{host}/hook"


@pytest.mark.parametrize(
    "host", [*LOOPBACK_SPELLINGS, "localhost.", "LocalHost", "x.localhost.", *EMBEDDING_IPV6]
)
def test_internal_spellings_are_refused_at_create(host: str) -> None:
    with pytest.raises(InvalidArgument) as refused:
        AWS.check_url(url(host))
    assert refused.value.message == (
        "callback.url: may not be a loopback, private, link-local or metadata address"
    )


@pytest.mark.parametrize("host", [*PUBLIC, "example.com", "0x7f000001.example.com", "1.2.3.4.5"])
def test_public_addresses_and_names_pass_at_create(host: str) -> None:
    AWS.check_url(url(host))


@pytest.mark.parametrize("address", EMBEDDING_IPV6)
def test_a_name_resolving_to_an_ipv6_form_of_an_internal_address_is_refused_at_send(address: str) -> None:
    policy = TargetPolicy(allow_private=False, resolve=lambda host: [address])
    with pytest.raises(TargetRefused):
        policy.check_send("https://hooks.example.com/x")


@pytest.mark.parametrize("host", [h for h in LOOPBACK_SPELLINGS if not h.endswith(".")])
def test_loopback_spellings_are_refused_at_send_too(host: str) -> None:
    """The system resolver reads these spellings as 127.0.0.1 (no DNS is asked)."""
    with pytest.raises(TargetRefused):
        AWS.check_send(url(host))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_sent_to(address: str) -> None:
    policy = TargetPolicy(allow_private=False, resolve=lambda host: [address])
    pinned = policy.check_send("https://hooks.example.com/x")
    assert pinned is not None and address in pinned.url and pinned.host_header == "hooks.example.com"
