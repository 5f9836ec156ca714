"""The client against a real `emit dev`: creates, reads, cancels, errors, room-wait, retries."""

from __future__ import annotations

import threading
from datetime import timedelta

import httpx
import pytest
from emit import (
    Emit,
    Internal,
    InvalidArgument,
    Job,
    Line,
    NewJob,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)

from tests.e2e.conftest import DevServer
from tests.sdk.support import Flaky, HandClock
from tests.support import PATIENCE_S, eventually

UNKNOWN_ID = "01M3QSGN0103P7EGVBX9D5NTSN"


def test_create_reads_back_and_a_repeated_key_answers_the_first_job(client: Emit) -> None:
    first = client.jobs.create("charge-invoice", {"invoiceId": "inv_1"}, key="charge-inv_1", max_attempts=5)
    again = client.jobs.create("charge-invoice", {"invoiceId": "inv_1"}, key="charge-inv_1")

    assert (first.outcome, first.new) == ("new", True)
    assert (again.id, again.outcome) == (first.id, "duplicate")
    job = client.jobs.get(first.id)
    assert (job.status, job.payload, job.key, job.max_attempts) == (
        "pending",
        {"invoiceId": "inv_1"},
        "charge-inv_1",
        5,
    )
    assert job.raw["status"] == "PENDING"


def test_create_many_answers_in_the_order_sent(client: Emit) -> None:
    created = client.jobs.create_many(
        [NewJob("a", 1, key="k1"), {"name": "b", "payload": 2}, NewJob("c", 3, key="k1")]
    )

    assert [c.outcome for c in created] == ["new", "new", "duplicate"]
    assert created[2].id == created[0].id
    assert [client.jobs.get(c.id).name for c in created[:2]] == ["a", "b"]


def test_errors_are_typed_and_carry_the_servers_message(dev: DevServer, client: Emit, space: str) -> None:
    with pytest.raises(NotFound, match=UNKNOWN_ID):
        client.jobs.get(UNKNOWN_ID)
    with pytest.raises(InvalidArgument, match=r"timeoutMs: must be at least 1000") as invalid:
        client.jobs.create("n", timeout=timedelta(milliseconds=5))
    assert (invalid.value.code, invalid.value.status) == ("InvalidArgument", 400)

    reader = client.tokens.create(["read"], spaces=[space], name="reader").secret
    with Emit(dev.url, reader, space) as read_only, pytest.raises(PermissionDenied, match="create"):
        read_only.jobs.create("n")
    with Emit(dev.url, "emit_nobody_secret", space) as stranger, pytest.raises(Unauthenticated):
        stranger.jobs.get(UNKNOWN_ID)


def test_list_lines_and_events_iterate_over_every_page(client: Emit) -> None:
    ids = [client.jobs.create("page", i).id for i in range(5)]

    assert [j.id for j in client.jobs.list(page_size=2)] == ids[::-1]
    assert [j.id for j in client.jobs.list(limit=3, page_size=2)] == ids[:1:-1]
    assert [j.id for j in client.jobs.list(status="pending", name="other")] == []
    first = client.jobs.page(limit=3)  # or a page at a time, for a caller that pages itself
    assert [j.id for j in first.jobs] == ids[:-4:-1] and first.cursor is not None
    rest = client.jobs.page(limit=100, cursor=first.cursor)
    assert [j.id for j in rest.jobs] == ids[-4::-1] and rest.cursor is None

    [held] = client.jobs.claim(count=1, names=["page"])
    lines = [{"level": "INFO", "message": f"line {i}"} for i in range(5)]
    client.jobs.report([{"id": held.id, "attempt": held.attempt, "lines": lines, "event": {"n": 0}}])
    client.jobs.report([{"id": held.id, "attempt": held.attempt, "event": {"n": n}} for n in (1, 2)])

    read = list(client.jobs.lines(held.id, page_size=2))
    assert [(line.seq, line.level, line.message) for line in read] == [
        (i, "info", f"line {i}") for i in range(5)
    ]
    assert [line.seq for line in client.jobs.lines(held.id, after=2)] == [3, 4]
    assert [e.data for e in client.jobs.events(held.id, page_size=2)] == [{"n": 0}, {"n": 1}, {"n": 2}]


def test_cancel_answers_each_id_in_order(client: Emit) -> None:
    job = client.jobs.create("n").id

    first = client.jobs.cancel(job, UNKNOWN_ID)
    [again] = client.jobs.cancel(job)

    assert first[0].status == "cancelled"
    assert first[1].rejection is not None and first[1].rejection.reason == "not_found"
    assert again.rejection is not None and again.rejection.reason == "already_finished"
    assert client.jobs.get(job).status == "cancelled"


def test_follow_yields_the_job_as_it_changes_and_its_lines_until_it_finishes(client: Emit) -> None:
    job_id = client.jobs.create("followed", timeout=30).id
    updates: list[Job | Line] = []

    def seen(percent: float | None) -> bool:
        """Whether follow has yielded the running job showing `percent`."""
        return any(
            isinstance(u, Job) and u.status == "running" and (u.progress and u.progress.percent) == percent
            for u in list(updates)
        )

    def work() -> None:
        [held] = client.jobs.claim(count=1, names=["followed"], wait=5)
        me = {"id": held.id, "attempt": held.attempt}
        for step in (1, 2):
            eventually(lambda step=step: seen((step - 1) * 50 or None))  # the last change was seen
            client.jobs.report(
                [
                    me
                    | {
                        "progress": {"percent": step * 50, "message": f"step {step}"},
                        "lines": [{"level": "INFO", "message": f"did {step}"}],
                    }
                ]
            )
        eventually(lambda: seen(100))
        client.jobs.report([me | {"complete": {"result": {"done": True}}}])

    worker = threading.Thread(target=work)
    worker.start()
    for update in client.jobs.follow(job_id, interval=0.05):
        updates.append(update)
    worker.join()

    lines = [u.message for u in updates if isinstance(u, Line)]
    jobs = [u for u in updates if isinstance(u, Job)]
    assert lines == ["did 1", "did 2"]
    assert jobs[0].status in ("pending", "running")
    percents = [j.progress.percent for j in jobs if j.progress]
    assert 50 in percents and percents == sorted(percents) and percents[-1] == 100
    assert updates[-1] == jobs[-1] and jobs[-1].status == "completed" and jobs[-1].result == {"done": True}
    assert updates.index(jobs[-1]) > max(i for i, u in enumerate(updates) if isinstance(u, Line))


def test_a_create_against_a_full_space_waits_until_room_appears(
    dev: DevServer, client: Emit, space: str
) -> None:
    client.spaces.update(max_in_flight=1)
    holder = client.jobs.create("n").id
    with Emit(dev.url, dev.token, space, room_wait=0) as impatient, pytest.raises(ResourceExhausted) as full:
        impatient.jobs.create("n")
    assert full.value.retry_after_ms == 1000

    clock = HandClock()
    patient = Emit(dev.url, dev.token, space, clock=clock)
    waited: list[str] = []
    waiting = threading.Thread(target=lambda: waited.append(patient.jobs.create("n", {"second": True}).id))
    waiting.start()
    eventually(lambda: clock.waiting_since(0))  # turned away, and waiting for room
    assert not waited

    client.jobs.cancel(holder)
    clock.advance(1.0)  # the wait the 429 asked for
    waiting.join(timeout=PATIENCE_S)
    assert len(waited) == 1
    patient.close()
    assert client.jobs.get(waited[0]).payload == {"second": True}


def test_reads_are_sent_again_after_a_lost_answer_or_a_5xx(dev: DevServer, client: Emit, space: str) -> None:
    job_id = client.jobs.create("n", 7).id
    lossy = Flaky({("GET", job_id): 2}, after=True)
    with Emit(dev.url, dev.token, space, http_transport=lossy) as flaky:
        assert flaky.jobs.get(job_id).payload == 7
    assert len(lossy.failed) == 2

    failing = Flaky({("GET", job_id): 1}, status=503)
    with Emit(dev.url, dev.token, space, http_transport=failing) as flaky:
        assert flaky.jobs.get(job_id).payload == 7


def test_a_keyed_create_is_sent_again_and_answers_the_job_it_made(dev: DevServer, space: str) -> None:
    lossy = Flaky({("POST", "/jobs"): 1}, after=True)
    with Emit(dev.url, dev.token, space, http_transport=lossy) as flaky:
        created = flaky.jobs.create("n", key="only-once")
        listed = list(flaky.jobs.list())
    assert lossy.failed and created.outcome == "duplicate"
    assert [j.id for j in listed] == [created.id]


def test_an_unkeyed_create_without_an_answer_raises_with_its_outcome_unknown(
    dev: DevServer, space: str
) -> None:
    lossy = Flaky({("POST", "/jobs"): 1}, after=True)
    with Emit(dev.url, dev.token, space, http_transport=lossy) as flaky:
        with pytest.raises(Unavailable) as lost:
            flaky.jobs.create("n")
        assert lost.value.outcome_unknown
        assert len(list(flaky.jobs.list())) == 1  # it was made, as far as anyone could tell

    failing = Flaky({("POST", "/jobs"): 1}, status=500)
    with (
        Emit(dev.url, dev.token, space, http_transport=failing) as flaky,
        pytest.raises(Internal) as internal,
    ):
        flaky.jobs.create("n")
    assert internal.value.outcome_unknown


def test_a_create_that_never_left_is_sent_again_even_without_a_key(dev: DevServer, space: str) -> None:
    refused = Flaky({("POST", "/jobs"): 2}, error=httpx.ConnectError)
    with Emit(dev.url, dev.token, space, http_transport=refused) as flaky:
        created = flaky.jobs.create("n")
        assert [j.id for j in flaky.jobs.list()] == [created.id]
    assert len(refused.failed) == 2


def test_spaces_and_tokens(client: Emit, space: str) -> None:
    settings = client.spaces.update(max_attempts=7, webhook_secret="a-webhook-secret-1234")
    assert settings.max_attempts == 7 and settings.webhook_secret_set
    assert client.spaces.get().max_attempts == 7
    other = client.with_space(f"{space}-b")
    assert other.jobs.get(other.jobs.create("n").id).space == f"{space}-b"

    minted = client.tokens.create(["work", "read"], spaces=[space], name="sdk test")
    assert minted.secret.startswith("emit_") and minted.token.spaces == (space,)
    assert minted.token.id in [t.id for t in client.tokens.list()]
    client.tokens.revoke(minted.token.id)
    assert minted.token.id not in [t.id for t in client.tokens.list()]
    with pytest.raises(NotFound):
        client.tokens.revoke(minted.token.id)


def test_configuration_comes_from_the_environment(dev: DevServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMIT_URL", dev.url)
    monkeypatch.setenv("EMIT_TOKEN", dev.token)
    monkeypatch.setenv("EMIT_SPACE", "from-env")
    with Emit() as client:
        assert client.jobs.get(client.jobs.create("n").id).space == "from-env"
    monkeypatch.delenv("EMIT_URL")
    with pytest.raises(ValueError, match="EMIT_URL"):
        Emit()


def test_get_shows_each_attempt(client: Emit) -> None:
    job_id = client.jobs.create("flaky-report", max_attempts=3, backoff=0).id
    [first] = client.jobs.claim(count=1, names=["flaky-report"])
    client.jobs.report([{"id": job_id, "attempt": first.attempt, "fail": {"error": "db timeout"}}])
    [second] = client.jobs.claim(count=1, names=["flaky-report"])
    client.jobs.report([{"id": job_id, "attempt": second.attempt, "complete": {}}])
    tried = client.jobs.get(job_id).attempts
    assert [(a.attempt, a.outcome, a.error) for a in tried] == [
        (1, "failed", "db timeout"),
        (2, "completed", None),
    ]
    assert all(a.ended_at_ms is not None and a.ended_at_ms >= a.started_at_ms for a in tried)
