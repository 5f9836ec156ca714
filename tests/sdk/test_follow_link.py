"""`client.jobs.follow_link`: a link made with the SDK, followed over plain HTTP with no token."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from emit import Emit, InvalidArgument

from tests.dev import DevServer


def test_a_follow_link_opens_the_job_to_a_plain_get_from_any_origin(dev: DevServer, client: Emit) -> None:
    created = client.jobs.create("thumbnail", {"image": "cat.png"})
    link = client.jobs.follow_link(created.id, ttl=timedelta(minutes=5))
    assert link.url == f"{dev.url}/v1/follow/{link.token}"
    assert link.token not in repr(link)
    answer = httpx.get(link.url, headers={"origin": "https://example.org"})
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == "*"
    assert answer.json()["id"] == created.id
    assert answer.json()["status"] == "PENDING" and "payload" not in answer.json()
    short = client.jobs.follow_link(created.id, ttl=60)
    assert short.expires_at_ms < link.expires_at_ms


def test_a_ttl_out_of_range_is_refused_naming_the_field(client: Emit) -> None:
    created = client.jobs.create("thumbnail")
    with pytest.raises(InvalidArgument, match="ttlMs: must be at least 60000"):
        client.jobs.follow_link(created.id, ttl=59)
