"""Flow control from the SDK, against a real `emit dev`: priority and concurrency keys on
create, a name's policy read, changed, paused, resumed and reset, and diagnostics."""

from __future__ import annotations

from datetime import timedelta

import pytest
from emit import Emit, InvalidArgument, Rate


def test_priority_and_concurrency_key_are_sent_and_read_back(client: Emit) -> None:
    low = client.jobs.create("sdk-order", {"n": 1}, priority=-5, concurrency_key="tenant-1")
    high = client.jobs.create("sdk-order", {"n": 2}, priority=5)
    job = client.jobs.get(low.id)
    assert job.priority == -5 and job.concurrency_key == "tenant-1"
    assert job.waiting_on is not None and job.waiting_on.reason == "worker"
    claimed = client.jobs.claim(count=2, names=["sdk-order"])
    assert [c.id for c in claimed] == [high.id, low.id]


def test_a_names_policy_is_read_changed_paused_resumed_and_reset(client: Emit) -> None:
    fresh = client.names.policy("mail")
    assert fresh.paused is False and fresh.per_key_concurrency == 1 and fresh.overridden == ()
    changed = client.names.update(
        "mail", concurrency=5, rate=Rate(10, timedelta(seconds=1)), aging_interval=None
    )
    assert changed.concurrency == 5 and changed.rate == Rate(10, timedelta(seconds=1))
    assert changed.aging_interval is None
    assert changed.overridden == ("concurrency", "rate", "aging_interval")
    job = client.jobs.create("mail")
    assert client.names.pause("mail").paused is True
    assert client.jobs.claim(count=1, names=["mail"]) == []
    waiting = client.jobs.get(job.id).waiting_on
    assert waiting is not None and waiting.reason == "paused"
    assert client.names.resume("mail").overridden == ("concurrency", "rate", "paused", "aging_interval")
    assert [c.id for c in client.jobs.claim(count=1, names=["mail"])] == [job.id]
    reset = client.names.reset("mail")
    assert reset.overridden == () and reset.concurrency is None


def test_a_bad_field_is_refused(client: Emit) -> None:
    with pytest.raises(InvalidArgument, match=r"concurrency: must be at least 1"):
        client.names.update("mail", concurrency=0)
    with pytest.raises(TypeError, match="not a policy field: pause"):
        client.names.update("mail", pause=True)


def test_diagnostics_show_each_names_pending_work(client: Emit) -> None:
    client.jobs.create("reports", delay=timedelta(minutes=1))
    client.jobs.create("reports")
    client.names.pause("quiet")
    found = {n.name: n for n in client.diagnostics()}
    assert set(found) == {"reports", "quiet"}
    reports = found["reports"]
    assert (reports.pending, reports.claimable, reports.capped) == (2, 1, False)
    assert reports.waiting_on == ("delay", "worker") and reports.oldest_claimable_at_ms is not None
    assert found["quiet"].policy.paused is True and found["quiet"].pending == 0
