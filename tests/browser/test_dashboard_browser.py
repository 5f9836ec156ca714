"""The dashboard driven in Chromium against the session's `emit dev`: every view and action
the contract lists, with a worker (the SDK) running a job while the page follows it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from emit import Emit, JobDefaults
from emit.names import Rate

from tests.browser.conftest import local, require_browser, shot, sign_in
from tests.dev import DevServer
from tests.support import PATIENCE_S

require_browser()

try:
    from playwright.sync_api import expect
except ImportError:  # EMIT_REQUIRE_BROWSER=1 without playwright: the `browser` fixture fails each test
    expect = None

XSS = '<img src=x onerror="window.__x=1">'


def _job_url(dev: DevServer, space: str, job_id: str = "") -> str:
    return f"{dev.url}/#/s/{space}" + (f"/jobs/{job_id}" if job_id else "")


def test_sign_in_then_watch_a_job_go_from_pending_to_completed(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    page.goto(dev.url + "/")
    shot(page, "sign-in")
    page.fill("#token", "emit_not_a_real_token")
    page.click("#sign-in button[type=submit]")
    expect(page.locator("#sign-in [role=alert]")).to_contain_text("token was refused")
    sign_in(page, dev)
    assert page.evaluate("sessionStorage.getItem('emit.token')") == dev.token
    assert dev.token not in page.url

    job_id = client.jobs.create("resize-image", {"w": 640}).id
    page.reload()
    page.click(f"#spaces a:text-is('{space}')")
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    shot(page, "spaces-jobs")
    page.click(f"#jobs a:text-is('{job_id}')")
    expect(page.locator("#job-status")).to_have_text("PENDING")

    [held] = client.jobs.claim(count=1, names=["resize-image"])
    expect(page.locator("#job-status")).to_have_text("RUNNING")
    me = {"id": held.id, "attempt": held.attempt}
    client.jobs.report(
        [
            me
            | {
                "progress": {"percent": 40, "message": "halfway"},
                "lines": [{"level": "INFO", "message": "resized 1 of 2"}],
            }
        ]
    )
    expect(page.locator("#job")).to_contain_text("40% halfway")
    expect(page.locator("#lines li")).to_have_count(1)
    expect(page.locator("#lines")).to_contain_text("resized 1 of 2")
    shot(page, "job-running")
    client.jobs.report(
        [
            me
            | {
                "lines": [{"level": "INFO", "message": "resized 2 of 2"}],
                "complete": {"result": {"url": "s3://x"}},
            }
        ]
    )
    expect(page.locator("#job-status")).to_have_text("COMPLETED")
    expect(page.locator("#lines li")).to_have_count(2)
    expect(page.locator("#job-result")).to_contain_text("s3://x")
    shot(page, "job")


def test_create_cancel_and_retry_from_the_page(page: Any, dev: DevServer, client: Emit, space: str) -> None:
    sign_in(page, dev)
    page.goto(_job_url(dev, space))
    page.click("summary:text('Create a job')")
    page.fill("#create-job [name=name]", "send-email")
    page.fill("#create-job [name=payload]", '{"to": "ada@example.com"}')
    page.click("#create-job button[type=submit]")
    expect(page.locator("#job-status")).to_have_text("PENDING")
    page.click("#cancel")
    expect(page.locator("#job-status")).to_have_text("CANCELLED")
    [cancelled] = client.jobs.list(status="cancelled")
    assert cancelled.name == "send-email"

    failing = client.jobs.create("flaky", {"n": 1}, max_attempts=1).id
    [held] = client.jobs.claim(count=1, names=["flaky"])
    client.jobs.report([{"id": held.id, "attempt": held.attempt, "fail": {"error": "boom"}}])
    page.goto(_job_url(dev, space, failing))
    expect(page.locator("#job-status")).to_have_text("FAILED")
    expect(page.locator("#job-error")).to_have_text("boom")
    page.click("#retry")
    expect(page.locator("#job")).to_contain_text(f"Retry of{failing}")
    expect(page.locator("#job-status")).to_have_text("PENDING")
    assert [j.retry_of for j in client.jobs.list(name="flaky") if j.id != failing] == [failing]
    page.click("#job-retry-of")
    expect(page.locator("h2 code")).to_have_text(failing)
    expect(page.locator("#job-status")).to_have_text("FAILED")


def test_a_job_shows_its_guarantee_and_deadline(page: Any, dev: DevServer, client: Emit, space: str) -> None:
    once = client.jobs.create("once", guarantee="at_most_once", expires_in=timedelta(hours=1)).id
    plain = client.jobs.create("plain").id
    expires = client.jobs.get(once).expires_at_ms
    assert expires is not None
    sign_in(page, dev)
    page.goto(_job_url(dev, space, once))
    expect(page.locator("#job-guarantee")).to_have_text("AT_MOST_ONCE")
    expect(page.locator("#job-expires time")).to_have_text(local(expires))
    expect(page.locator("#job-expires .ago")).to_have_text(re.compile(r"^in (59|60) min"))
    page.goto(_job_url(dev, space, plain))
    expect(page.locator("#job-guarantee")).to_have_text("AT_LEAST_ONCE")
    expect(page.locator("#job-expires")).to_have_text("never")
    assert page.locator("#job-retry-of").count() == 0


def test_a_multi_line_error_shows_whole_with_its_first_line_in_the_attempts(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    error = "\n".join(
        [
            "ValueError: bad size",
            "Traceback (most recent call last):",
            '  File "resize.py", line 9',
            "    raise",
        ]
    )
    job_id = client.jobs.create("resize", max_attempts=1).id
    [held] = client.jobs.claim(count=1, names=["resize"])
    client.jobs.report([{"id": held.id, "attempt": held.attempt, "fail": {"error": error}}])
    sign_in(page, dev)
    page.goto(_job_url(dev, space, job_id))
    expect(page.locator("#job-status")).to_have_text("FAILED")
    shown = page.locator("#job-error")
    expect(shown).to_have_text(error)
    assert shown.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"  # one line each
    cell = page.locator("#attempts tr[data-attempt='1'] td .error")
    expect(cell).to_have_text("ValueError: bad size …")
    expect(cell).to_have_attribute("title", error[:100])  # an attempt keeps its error's start


def test_pause_resume_and_change_a_limit_in_place(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    client.jobs.create("mail")
    sign_in(page, dev)
    page.goto(_job_url(dev, space) + "/names")
    card = page.locator("section.name[data-name=mail]")
    card.locator("button.pause").click()
    expect(card.locator("h2")).to_contain_text("PAUSED")
    expect(card.locator("button.pause")).to_have_text("Resume")
    assert client.names.policy("mail").paused is True
    shot(page, "names")
    card.locator("button.pause").click()
    expect(card.locator("button.pause")).to_have_text("Pause")
    assert client.names.policy("mail").paused is False
    card.locator("[name=concurrency]").fill("3")
    card.locator("[name=agingIntervalMs]").fill("2")
    card.locator("[name='agingIntervalMs.unit']").select_option(label="minutes")
    card.locator("button[type=submit]").click()
    expect(card.locator(".concurrency-text")).to_have_text("3")
    expect(card.locator("[name=concurrency]")).to_have_value("3")
    saved = client.names.policy("mail")
    assert (saved.concurrency, saved.aging_interval) == (3, timedelta(minutes=2))

    # A fresh page, so the card typed into next is not replaced by the save's reload above.
    page.reload()
    expect(card.locator("[name=concurrency]")).to_have_value("3")
    card.locator("[name='rate.tokens']").fill("20")
    card.locator("[name='rate.intervalMs']").fill("1")
    card.locator("[name='rate.intervalMs.unit']").select_option(label="minutes")
    card.locator("[name='perKeyRate.tokens']").fill("2")
    card.locator("[name='perKeyRate.intervalMs']").fill("1")
    card.locator("button[type=submit]").click()
    expect(card.locator(".rate-text")).to_have_text("20 per 1 min")
    expect(card.locator(".per-key-rate-text")).to_have_text("2 per 1 s")
    policy = client.names.policy("mail")
    assert (policy.rate, policy.per_key_rate) == (
        Rate(20, timedelta(minutes=1)),
        Rate(2, timedelta(seconds=1)),
    )
    assert policy.concurrency == 3, "only the fields changed are sent"

    card.locator("[name='perKeyRate.intervalMs']").fill("")
    card.locator("button[type=submit]").click()
    expect(card.locator("[role=alert]")).to_have_text(re.compile(r"^perKeyRate: give both"))
    card.locator("[name='rate.tokens']").fill("")
    card.locator("[name='rate.intervalMs']").fill("")
    card.locator("[name='perKeyRate.tokens']").fill("")
    card.locator("button[type=submit]").click()
    expect(card.locator(".rate-text")).to_have_text("no limit")
    expect(card.locator(".per-key-rate-text")).to_have_text("no limit")
    policy = client.names.policy("mail")
    assert (policy.rate, policy.per_key_rate) == (None, None)


def test_settings_with_a_new_webhook_secret_shown_once(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    client.jobs.create("n")
    sign_in(page, dev)
    page.goto(_job_url(dev, space) + "/settings")
    page.fill("#settings [name=maxAttempts]", "9")
    page.click("#settings button[type=submit]")
    expect(page.locator(".ok")).to_have_text("Saved.")
    assert client.spaces.get().max_attempts == 9
    page.click("#new-secret")
    secret = page.locator("#webhook-secret pre.secret")
    expect(secret).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
    assert client.spaces.get().webhook_secret_set
    shot(page, "settings")
    page.reload()
    expect(page.locator("#settings [name=maxAttempts]")).to_have_value("9")
    assert page.locator("#webhook-secret pre").count() == 0, "shown once: gone after a reload"


def test_settings_show_and_change_notifications_and_show_defaults_per_name(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    client.spaces.update(
        job_defaults={"mail": JobDefaults(priority=5, max_attempts=2), "report": JobDefaults(delay=1)}
    )
    client.spaces.notify_on_failure("page-oncall")
    sign_in(page, dev)
    page.goto(_job_url(dev, space) + "/settings")
    expect(page.locator("#notifications [name='onFailure.name']")).to_have_value("page-oncall")
    expect(page.locator("#notifications [name='onSettled.name']")).to_have_value("")
    expect(page.locator("#job-defaults tr[data-name=mail]")).to_contain_text("priority: 5, maxAttempts: 2")
    expect(page.locator("#job-defaults tr[data-name=report]")).to_contain_text("delayMs: 1000")

    page.fill("#notifications [name='onSettled.name']", "audit")
    page.click("#notifications button[type=submit]")
    expect(page.locator("[role=alert]")).to_have_text(re.compile(r"^onSettled.statuses: "))
    page.check("#notifications input[value=COMPLETED]")
    page.check("#notifications input[value=CANCELLED]")
    page.fill("#notifications [name='onFailure.name']", "")
    page.click("#notifications button[type=submit]")
    expect(page.locator(".ok")).to_have_text("Saved.")
    settings = client.spaces.get().raw
    assert settings["onFailure"] is None
    assert {k: settings["onSettled"][k] for k in ("name", "statuses")} == {
        "name": "audit",
        "statuses": ["COMPLETED", "CANCELLED"],
    }
    shot(page, "settings-notifications")
    page.reload()
    expect(page.locator("#notifications [name='onSettled.name']")).to_have_value("audit")
    expect(page.locator("#notifications input[value=CANCELLED]")).to_be_checked()
    expect(page.locator("#notifications input[value=FAILED]")).not_to_be_checked()


YEARLY = "0 3 1 1 *"
"""A cron that fires at 03:00 UTC on New Year's Day only: no fire comes while a test runs (but
then), so a schedule's last run is the trigger the test made, and its next runs stay put."""


@pytest.fixture
def rest(dev: DevServer, space: str) -> Iterator[httpx.Client]:
    """The space's schedules over HTTP (the SDK has no schedules yet)."""
    headers = {"authorization": f"Bearer {dev.token}"}
    with httpx.Client(
        base_url=f"{dev.url}/v1/spaces/{space}/schedules", headers=headers, timeout=PATIENCE_S
    ) as http:
        yield http


def _put_schedule(rest: httpx.Client, schedule_id: str, **fields: Any) -> dict[str, Any]:
    body = {"cron": YEARLY, "timezone": "UTC", "job": {"name": "report"}} | fields
    answer = rest.put(f"/{quote(schedule_id, safe='')}", json=body)
    assert answer.status_code in (200, 201), answer.text
    return dict(answer.json())


def _schedule(rest: httpx.Client, schedule_id: str) -> httpx.Response:
    return rest.get(f"/{quote(schedule_id, safe='')}")


def test_schedules_show_their_next_runs_and_last_run(
    page: Any, dev: DevServer, client: Emit, space: str, rest: httpx.Client
) -> None:
    _put_schedule(rest, "daily:report", overlap="SKIP", job={"name": "report", "payload": {"n": 1}})
    _put_schedule(
        rest,
        "paris-cleanup",
        cron="30 4 1 7 *",
        timezone="Europe/Paris",
        job={"name": "cleanup"},
        paused=True,
    )
    triggered = rest.post(f"/{quote('daily:report', safe='')}:trigger")
    assert triggered.status_code in (200, 201), triggered.text
    daily = _schedule(rest, "daily:report").json()
    assert daily["lastRun"]["jobId"] == triggered.json()["id"]

    sign_in(page, dev)
    page.goto(_job_url(dev, space) + "/schedules")
    expect(page.locator("nav.tabs a[aria-current=page]")).to_have_text("Schedules")
    expect(page.locator("#schedules tbody tr")).to_have_count(2)
    first = page.locator("#schedules tr[data-id='daily:report']")
    expect(first).to_contain_text(f"{YEARLY} UTC")
    expect(first.locator("td").nth(2)).to_have_text("report")
    expect(first.locator("td").nth(3)).to_have_text("SKIP")
    expect(first.locator("td").nth(4)).to_have_text("active")
    expect(first.locator("ul.runs li time")).to_have_text([local(ms) for ms in daily["nextRunsAtMs"]])
    assert len(daily["nextRunsAtMs"]) == 5
    expect(first.locator("a.last-run")).to_have_text(local(daily["lastRun"]["atMs"]))
    paused = page.locator("#schedules tr[data-id=paris-cleanup]")
    expect(paused).to_contain_text("30 4 1 7 * Europe/Paris")
    expect(paused.locator("td").nth(2)).to_have_text("cleanup")
    expect(paused.locator("td").nth(3)).to_have_text("ALLOW")
    expect(paused.locator(".badge.paused")).to_have_text("PAUSED")
    expect(paused.locator("td").nth(5)).to_have_text("none while paused")
    expect(paused.locator("td").nth(6)).to_have_text("—")
    expect(paused.locator("button.pause")).to_have_text("Resume")
    shot(page, "schedules")

    first.locator("a.last-run").click()
    expect(page.locator("h2 code")).to_have_text(daily["lastRun"]["jobId"])
    expect(page.locator("#job-schedule")).to_have_text("daily:report")
    expect(page.locator("#job-payload")).to_contain_text('"n": 1')
    page.click("#job-schedule")
    expect(page.locator("#schedules tbody tr")).to_have_count(2)


def test_pause_resume_trigger_and_delete_a_schedule_from_the_page(
    page: Any, dev: DevServer, client: Emit, space: str, rest: httpx.Client
) -> None:
    _put_schedule(rest, "nightly:report")
    _put_schedule(rest, "other")
    sign_in(page, dev)
    page.goto(_job_url(dev, space) + "/schedules")
    row = page.locator("#schedules tr[data-id='nightly:report']")
    expect(row.locator("ul.runs li")).to_have_count(5)
    expect(row.locator("td").nth(6)).to_have_text("—")

    row.locator("button.pause").click()
    expect(row.locator("button.pause")).to_have_text("Resume")
    expect(row.locator(".badge.paused")).to_have_text("PAUSED")
    expect(row.locator("td").nth(5)).to_have_text("none while paused")
    stopped = _schedule(rest, "nightly:report").json()
    assert (stopped["paused"], stopped["nextRunsAtMs"]) == (True, [])
    row.locator("button.pause").click()
    expect(row.locator("button.pause")).to_have_text("Pause")
    expect(row.locator("ul.runs li")).to_have_count(5)
    running = _schedule(rest, "nightly:report").json()
    assert running["paused"] is False and len(running["nextRunsAtMs"]) == 5

    row.locator("button.trigger").click()
    made = page.locator("#triggered a")
    expect(made).to_have_text(re.compile(r"\S"))
    job_id = made.inner_text()
    expect(page.locator("#triggered")).to_contain_text(f"nightly:report made job {job_id}")
    expect(row.locator("a.last-run")).to_have_attribute("title", f"job {job_id}")
    assert _schedule(rest, "nightly:report").json()["lastRun"]["jobId"] == job_id
    assert client.jobs.get(job_id).name == "report"

    row.locator("button.delete").click()
    expect(row.locator("button.delete")).to_have_text("Really delete?")
    assert _schedule(rest, "nightly:report").status_code == 200, "deleted only once confirmed"
    row.locator("button.delete").click()
    expect(row).to_have_count(0)
    expect(page.locator("#schedules tbody tr")).to_have_count(1)
    assert _schedule(rest, "nightly:report").status_code == 404
    assert _schedule(rest, "other").status_code == 200

    made.click()
    expect(page.locator("h2 code")).to_have_text(job_id)
    expect(page.locator("#job-status")).to_have_text("PENDING")


def test_schedules_a_page_at_a_time(page: Any, dev: DevServer, space: str, rest: httpx.Client) -> None:
    ids = [f"s{n:02}" for n in range(27)]
    for schedule_id in ids:
        _put_schedule(rest, schedule_id)
    sign_in(page, dev)
    page.goto(_job_url(dev, space) + "/schedules")
    rows = page.locator("#schedules tbody tr")
    expect(rows).to_have_count(25)
    expect(rows.first).to_have_attribute("data-id", "s00")
    page.click("button:text-is('Next →')")
    expect(rows).to_have_count(2)
    expect(rows.first).to_have_attribute("data-id", "s25")
    expect(page.locator("button:text-is('Next →')")).to_be_disabled()
    rows.first.locator("button.pause").click()
    expect(rows.first.locator("button.pause")).to_have_text("Resume")
    expect(rows).to_have_count(2)  # the page shown is loaded again, not the first
    page.click("button:text-is('← Previous')")
    expect(rows).to_have_count(25)
    expect(page.locator("button:text-is('← Previous')")).to_be_disabled()


def test_a_read_token_sees_schedules_and_is_shown_the_refusal_of_a_change(
    page: Any, dev: DevServer, client: Emit, space: str, rest: httpx.Client
) -> None:
    _put_schedule(rest, "report")
    reader = client.tokens.create(["read"], spaces=[space]).secret
    sign_in(page, dev, reader)
    page.goto(_job_url(dev, space) + "/schedules")
    row = page.locator("#schedules tr[data-id=report]")
    expect(row.locator("ul.runs li")).to_have_count(5)
    row.locator("button.delete").click()  # the first click only asks to confirm
    for button, method in (("pause", "PATCH"), ("trigger", "POST"), ("delete", "DELETE")):
        with page.expect_response(lambda r, m=method: r.request.method == m) as refused:
            row.locator(f"button.{button}").click()
        assert refused.value.status == 403
        message = refused.value.json()["message"]
        expect(page.locator("[role=alert]")).to_have_text(f"403: {message}")
    shown = _schedule(rest, "report").json()
    assert (shown["paused"], shown["lastRun"]) == (False, None)
    assert page.locator("#triggered *").count() == 0


def test_mint_list_and_revoke_a_token(page: Any, dev: DevServer, client: Emit, space: str) -> None:
    sign_in(page, dev)
    page.goto(dev.url + "/#/tokens")
    page.click("summary:text('Mint a token')")
    page.fill("#mint [name=name]", f"reader of {space}")
    page.check("#mint input[value=read]")
    page.fill("#mint [name=spaces]", space)
    page.click("#mint button[type=submit]")
    secret = page.locator("#minted pre.secret").inner_text()
    assert secret.startswith("emit_")
    token_id = secret.split("_")[1]
    row = page.locator(f"#tokens tr[data-id='{token_id}']")
    expect(row).to_contain_text(space)
    shot(page, "tokens")
    with Emit(dev.url, secret) as reader:
        assert [s.name for s in reader.spaces.list()] == []  # its space has no job yet
    row.locator("button.revoke").click()
    expect(row.locator("button.revoke")).to_have_text("Really revoke?")
    row.locator("button.revoke").click()
    expect(row).to_have_count(0)
    assert token_id not in {t.id for t in client.tokens.list()}


def test_what_a_job_carries_is_shown_as_text(page: Any, dev: DevServer, client: Emit, space: str) -> None:
    job_id = client.jobs.create("n", {"html": XSS}, max_attempts=1).id
    [held] = client.jobs.claim(count=1, names=["n"])
    client.jobs.report(
        [
            {
                "id": held.id,
                "attempt": held.attempt,
                "lines": [{"level": "INFO", "message": XSS}],
                "fail": {"error": XSS},
            }
        ]
    )
    sign_in(page, dev)
    page.goto(_job_url(dev, space, job_id))
    expect(page.locator("#job-error")).to_have_text(XSS)
    expect(page.locator("#lines")).to_contain_text(XSS)
    expect(page.locator("#job-payload")).to_contain_text(XSS.replace('"', '\\"'))
    assert page.locator("img").count() == 0
    assert page.evaluate("window.__x") is None


def test_usable_at_a_phone_width(browser: Any, dev: DevServer, client: Emit, space: str) -> None:
    client.jobs.create("n", {"long": "x" * 500})
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    page = context.new_page()
    try:
        sign_in(page, dev)
        page.goto(_job_url(dev, space))
        expect(page.locator("#jobs tbody tr")).to_have_count(1)
        page.locator("#jobs tbody a").click()
        expect(page.locator("#job-payload")).to_contain_text("xxxx")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shot(page, "job-phone")
    finally:
        context.close()


def test_the_navigation_shows_only_once_signed_in(page: Any, dev: DevServer) -> None:
    page.goto(dev.url + "/")
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#nav")).to_be_hidden()
    sign_in(page, dev)
    expect(page.locator("#nav")).to_be_visible()
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#nav")).to_be_hidden()
