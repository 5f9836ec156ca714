"""The reads the API's use cases ask for, in domain values: a page of jobs with its cursor,
a followed job with its version, a name's counted limits, and a job's lines and events."""

from __future__ import annotations

import json

from shared.job import JobStatus, Progress
from shared.machine import claim, complete, keep
from shared.store.port import Event, Line, NameClaim, ReportExtras
from tests.store.shelf import KEEP, MINUTE, Shelf


def test_a_page_is_newest_first_and_its_cursor_is_where_the_next_starts(shelf: Shelf) -> None:
    ids = []
    for n in range(5):
        ids.append(shelf.put("a" if n % 2 else "b"))
        shelf.clock.advance(10)
    page = shelf.store.jobs_page(
        shelf.space, before=None, limit=2, status=None, name=None, now_ms=shelf.now()
    )
    assert [j.id for j in page.jobs] == ids[::-1][:2] and page.cursor == ids[3]
    rest = shelf.store.jobs_page(
        shelf.space, before=page.cursor, limit=3, status=None, name=None, now_ms=shelf.now()
    )
    assert [j.id for j in rest.jobs] == ids[::-1][2:] and rest.cursor is None, "the last page says so"
    named = shelf.store.jobs_page(
        shelf.space, before=None, limit=9, status=None, name="a", now_ms=shelf.now()
    )
    assert [j.id for j in named.jobs] == [ids[3], ids[1]]
    assert all(j.payload is None and j.result is None for j in page.jobs + rest.jobs), "no bodies"


def test_a_page_leaves_out_a_job_past_its_retention_and_filters_by_status(shelf: Shelf) -> None:
    old = shelf.running()
    shelf.complete(old)
    kept = shelf.put()
    done = shelf.store.jobs_page(
        shelf.space, before=None, limit=9, status=JobStatus.COMPLETED, name=None, now_ms=shelf.now()
    )
    assert [j.id for j in done.jobs] == [old]
    later = shelf.now() + KEEP.completed_ms
    page = shelf.store.jobs_page(shelf.space, before=None, limit=1, status=None, name=None, now_ms=later)
    assert ([j.id for j in page.jobs], page.cursor) == ([kept], None), "a purged job is not one more"


def test_a_followed_jobs_version_changes_exactly_when_what_it_shows_does(shelf: Shelf) -> None:
    job_id = shelf.put()

    def version() -> str:
        watched = shelf.store.watched(shelf.space, job_id, now_ms=shelf.now())
        assert watched is not None
        return watched.version

    pending = version()
    shelf.clock.advance(1_000)
    assert version() == pending, "time passing is no news"
    shelf.running()  # another job's changes are not this one's
    assert version() == pending
    shelf.apply(job_id, claim(attempt_before=0, now_ms=shelf.now(), lease_ms=MINUTE))
    running = version()
    assert running != pending
    shelf.store.transition(shelf.space, job_id, keep(attempt=1), extras=ReportExtras(lines=2))
    lined = version()
    assert lined != running
    progress = ReportExtras(progress=Progress(40, "half"))
    shelf.store.transition(shelf.space, job_id, keep(attempt=1), extras=progress)
    assert version() not in (running, lined)


def test_a_finished_job_is_followed_with_its_result_unless_the_follower_has_its_version(
    shelf: Shelf,
) -> None:
    job_id = shelf.running()
    raw = json.dumps({"frames": list(range(300))}).encode()  # kept outside the job item
    value = shelf.store.pack(shelf.space, job_id, "result", raw, attempt=1)
    assert value.ref is not None
    shelf.store.blobs.store([value])  # as a report does, before the write that points at it
    done = complete(attempt=1, now_ms=shelf.now(), retention=KEEP)
    shelf.store.transition(shelf.space, job_id, done, value=value)
    seen = shelf.store.watched(shelf.space, job_id, now_ms=shelf.now())
    assert seen is not None and seen.outcome and seen.job.result == json.loads(raw)
    again = shelf.store.watched(shelf.space, job_id, now_ms=shelf.now(), seen=seen.version)
    assert again is not None and (again.outcome, again.job.result) == (False, None)
    assert again.version == seen.version and again.job.status == JobStatus.COMPLETED


def test_a_job_missing_or_past_its_retention_is_not_followed(shelf: Shelf) -> None:
    job_id = shelf.running()
    shelf.complete(job_id)
    assert shelf.store.watched(shelf.space, "01J00000000000000000000000", now_ms=shelf.now()) is None
    assert shelf.store.watched(shelf.space, job_id, now_ms=shelf.now() + KEEP.completed_ms) is None


def test_a_names_running_jobs_are_counted_by_its_slots(shelf: Shelf) -> None:
    names = {"n": NameClaim(MINUTE, concurrency=5)}
    shelf.insert([shelf.record() for _ in range(3)])
    assert len(shelf.claim(names, count=2)) == 2
    assert shelf.store.running(shelf.space, "n") == 2
    assert shelf.store.running(shelf.space, "other") == 0


def test_a_names_rate_says_when_it_next_allows_a_hand_out(shelf: Shelf) -> None:
    names = {"n": NameClaim(MINUTE, rate=(1, MINUTE))}
    shelf.insert([shelf.record() for _ in range(2)])
    rate = {"tokens": 1, "interval_ms": MINUTE}
    assert shelf.store.rate_until(shelf.space, "n", now_ms=shelf.now(), **rate) is None
    assert len(shelf.claim(names)) == 1
    until = shelf.store.rate_until(shelf.space, "n", now_ms=shelf.now(), **rate)
    assert until is not None and shelf.now() < until <= shelf.now() + MINUTE


def test_a_keys_running_jobs_are_counted(shelf: Shelf) -> None:
    shelf.insert([shelf.record(concurrencyKey="k") for _ in range(2)], per_key={"n": 1})
    assert shelf.store.key_running(shelf.space, "n", "k") == 0
    assert len(shelf.claim({"n": NameClaim(MINUTE, per_key_concurrency=1)})) == 1
    assert shelf.store.key_running(shelf.space, "n", "k") == 1


def test_lines_and_events_read_back_as_values_with_what_was_sent_parsed(shelf: Shelf) -> None:
    journal, job_id = shelf.rt.journal, shelf.put()
    stored = [
        {"level": "INFO", "message": "a", "atMs": 5},
        {"level": "WARN", "message": "b", "source": "s", "metadata": json.dumps({"x": [1]}), "atMs": 6},
        {"level": "INFO", "message": "c", "metadata": "false", "atMs": 7},
    ]
    journal.append_lines(shelf.space, job_id, 0, stored)
    assert journal.lines(shelf.space, job_id, 1, 10) == [
        Line(1, "WARN", "b", 6, source="s", metadata={"x": [1]}),
        Line(2, "INFO", "c", 7, metadata=False),
    ]
    journal.put_event(shelf.space, job_id, 0, json.dumps({"e": 1}), 8)
    journal.put_event(shelf.space, job_id, 1, json.dumps("two"), 9)
    assert journal.events(shelf.space, job_id, 0, 10) == [Event(0, 8, {"e": 1}), Event(1, 9, "two")]
    assert journal.events(shelf.space, job_id, 1, 1) == [Event(1, 9, "two")]
