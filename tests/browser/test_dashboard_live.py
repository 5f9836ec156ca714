"""The dashboard as a product, in Chromium against the session's `emit dev`: the overview's
charts, the live job list with its counts, local times, search, bulk actions, dark mode."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
from emit import Emit

from tests.browser.conftest import local, require_browser, shot, sign_in
from tests.dev import DevServer
from tests.support import PATIENCE_S, eventually

require_browser()

try:
    from playwright.sync_api import expect
except ImportError:  # EMIT_REQUIRE_BROWSER=1 without playwright: the `browser` fixture fails each test
    expect = None


def _space_url(dev: DevServer, space: str, rest: str = "") -> str:
    return f"{dev.url}/#/s/{space}{rest}"


def _hour(dev: DevServer, space: str) -> dict[str, dict[str, int]]:
    """Each name's last hour from GET /metrics: its events summed, and its gauges now."""
    answer = httpx.get(
        f"{dev.url}/v1/spaces/{space}/metrics",
        headers={"authorization": f"Bearer {dev.token}"},
        timeout=PATIENCE_S,
    )
    answer.raise_for_status()
    shown: dict[str, dict[str, int]] = {}
    for series in answer.json()["names"]:
        points = series["points"]
        totals = {k: sum(p[k] for p in points) for k in ("created", "completed", "failed", "cancelled")}
        shown[series["name"]] = totals | {"pending": points[-1]["pending"], "running": points[-1]["running"]}
    return shown


def _settle(client: Emit, name: str, *, complete: int = 0, fail: int = 0) -> None:
    held = client.jobs.claim(count=complete + fail, names=[name])
    assert len(held) == complete + fail
    client.jobs.report(
        [
            {"id": j.id, "attempt": j.attempt}
            | ({"complete": {"result": 1}} if i < complete else {"fail": {"error": "boom"}})
            for i, j in enumerate(held)
        ]
    )


def test_the_overview_charts_each_names_hour_and_refreshes(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    for _ in range(3):
        client.jobs.create("mail", max_attempts=1)
    client.jobs.create("report")
    _settle(client, "mail", complete=1, fail=1)
    eventually(lambda: _hour(dev, space).get("mail", {}).get("failed") == 1 and "report" in _hour(dev, space))

    sign_in(page, dev)
    page.goto(_space_url(dev, space, "/overview"))
    expect(page.locator("nav.tabs a[aria-current=page]")).to_have_text("Overview")
    expect(page.locator("#charts section.metrics")).to_have_count(2)
    mail = page.locator("#charts section.metrics[data-name=mail]")
    throughput = mail.locator("figure[data-kind=throughput]")
    expect(throughput.locator(".summary")).to_have_text("1 completed, 1 failed in the last hour")
    expect(throughput.locator("svg.chart rect.bar.completed")).to_have_count(1)
    expect(throughput.locator("svg.chart rect.bar.failed")).to_have_count(1)
    expect(throughput.locator("svg.chart g.minute")).to_have_count(60)
    expect(mail.locator("figure[data-kind=backlog] .summary")).to_have_text(
        re.compile(r"^1 pending, 0 running now \(peak [1-3] pending\)$")
    )
    expect(mail.locator("figure[data-kind=backlog] svg.chart circle.dot")).to_have_count(60)
    expect(mail.locator("figure[data-kind=failures] .summary")).to_have_text("1 failed of 2 finished (50%)")
    report = page.locator("#charts section.metrics[data-name=report]")
    expect(report.locator("figure[data-kind=throughput] .summary")).to_have_text(
        "0 completed, 0 failed in the last hour"
    )
    expect(report.locator("figure[data-kind=throughput] rect.bar")).to_have_count(0)
    expect(page.locator("#charts-updated")).to_contain_text("refreshes every 10 s")
    shot(page, "overview")

    _settle(client, "mail", complete=1)  # the page shows it at a refresh, without a reload
    expect(throughput.locator(".summary")).to_have_text("2 completed, 1 failed in the last hour")
    expect(mail.locator("figure[data-kind=backlog] .summary")).to_have_text(
        re.compile(r"^0 pending, 0 running now")
    )


def test_the_job_list_follows_the_space_and_keeps_its_page_and_selection(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    made = client.jobs.create_many([{"name": "bulk"} for _ in range(27)])
    assert len(made) == 27
    sign_in(page, dev)
    page.goto(_space_url(dev, space))
    rows = page.locator("#jobs tbody tr")
    expect(rows).to_have_count(25)
    expect(page.locator("#counts a.count[data-status=PENDING] strong")).to_have_text("27")
    expect(page.locator("#counts")).to_contain_text("from the space's metrics")
    page.click("button:text-is('Older →')")
    expect(rows).to_have_count(2)
    first, second = (rows.nth(i).get_attribute("data-id") for i in range(2))
    rows.nth(0).locator("input.pick").check()

    client.jobs.cancel(second)  # shown at the next refresh, on the same page
    expect(page.locator(f"#jobs tr[data-id='{second}'] .badge")).to_have_text("CANCELLED")
    expect(rows).to_have_count(2)
    expect(page.locator(f"#jobs tr[data-id='{first}'] input.pick")).to_be_checked()
    expect(page.locator("#counts a.count[data-status=CANCELLED] strong")).to_have_text("1")
    expect(page.locator("#counts a.count[data-status=PENDING] strong")).to_have_text("26")

    page.click("button:text-is('← Newer')")
    expect(rows).to_have_count(25)
    newest = client.jobs.create("bulk").id
    expect(rows.first).to_have_attribute("data-id", newest)
    page.uncheck("#live")  # Live off: the page is left as it is
    expect(page.locator("#list-updated")).to_contain_text("Updated")
    page.click("#pick-page")
    expect(page.locator("#jobs tbody input.pick:checked")).to_have_count(25)


def test_times_are_local_with_their_zone_and_how_long_ago_and_a_job_shows_its_durations(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    job_id = client.jobs.create("resize").id
    waiting = client.jobs.create("later", delay=timedelta(hours=1)).id
    sign_in(page, dev)
    page.goto(_space_url(dev, space, f"/jobs/{waiting}"))
    expect(page.locator("#job-waiting")).to_have_text(re.compile(r"^due in (59|60) min"))
    page.goto(_space_url(dev, space, f"/jobs/{job_id}"))
    created = client.jobs.get(job_id).created_at_ms
    expect(page.locator("#job-created time")).to_have_text(local(created))
    expect(page.locator("#job-created time")).to_have_attribute("title", re.compile(r" UTC$"))
    expect(page.locator("#job-created .ago")).to_have_text(re.compile(r"^(just now|\d+ s ago)$"))
    expect(page.locator("#job-waiting")).to_have_text(re.compile(r" so far$"))
    assert re.search(r" CES?T$", local(created)), "the zone is named"

    [held] = client.jobs.claim(count=1, names=["resize"])
    me = {"id": held.id, "attempt": held.attempt}
    client.jobs.report([me | {"lines": [{"level": "INFO", "message": "started"}]}])
    expect(page.locator("#job-waited")).to_have_text(re.compile(r"^\d+ (ms|s)\b.* first attempt\)$"))
    expect(page.locator("#job-ran")).to_have_text(re.compile(r" so far \(attempt 1\)$"))
    expect(page.locator("#attempts tr[data-attempt='1']")).to_contain_text("running")
    client.jobs.report([me | {"complete": {"result": 1}}])
    expect(page.locator("#job-status")).to_have_text("COMPLETED")
    job = client.jobs.get(job_id)
    assert job.finished_at_ms is not None
    expect(page.locator("#job-finished time")).to_have_text(local(job.finished_at_ms))
    expect(page.locator("#job-ran")).to_have_text(re.compile(r"^\d+ (ms|s) \(attempt 1\)$"))
    tried = page.locator("#attempts tr[data-attempt='1'] td")
    expect(tried.nth(4)).to_have_text("COMPLETED")
    expect(tried.nth(1).locator("time")).to_have_text(local(job.attempts[0].started_at_ms))
    expect(page.locator("#job-took")).to_have_text(re.compile(r"^\d+ (ms|s)\b"))
    expect(page.locator("#lines li")).to_contain_text(local(created)[:10])
    page.goto(_space_url(dev, space))
    expect(page.locator(f"#jobs tr[data-id='{job_id}'] time")).to_have_text(local(created))


def test_find_a_job_by_id_or_by_key_in_the_jobs_the_filter_shows(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    keyed = client.jobs.create("order", key="order-42").id
    client.jobs.create("order", key="order-43")
    sign_in(page, dev)
    page.goto(_space_url(dev, space))
    expect(page.locator("#jobs tbody tr")).to_have_count(2)
    page.fill("#find", keyed)
    page.click("#search button[type=submit]")
    expect(page.locator("h2 code")).to_have_text(keyed)

    page.goto(_space_url(dev, space))
    page.fill("#find", "order-42")
    page.click("#search button[type=submit]")
    results = page.locator("#search-results")
    expect(results).to_contain_text("not by key, so the page read all 2 jobs of this filter: 1 with the key")
    expect(results.locator("tbody tr")).to_have_count(1)
    results.locator(f"a:text-is('{keyed}')").click()
    expect(page.locator("h2 code")).to_have_text(keyed)

    page.goto(_space_url(dev, space))
    page.fill("#find", "order-44")
    page.click("#search button[type=submit]")
    expect(results).to_contain_text(': 0 with the key "order-44"')
    expect(results.locator("table")).to_have_count(0)


def test_bulk_retry_and_cancel_of_the_selected_and_of_all_the_filter_shows(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    for _ in range(3):
        client.jobs.create("flaky", max_attempts=1)
    _settle(client, "flaky", fail=3)
    waiting = [c.id for c in client.jobs.create_many([{"name": "q"} for _ in range(4)])]
    sign_in(page, dev)
    page.goto(_space_url(dev, space) + "?name=q")
    rows = page.locator("#jobs tbody tr")
    expect(rows).to_have_count(4)
    for i in range(2):
        rows.nth(i).locator("input.pick").check()
    expect(page.locator("#selected-count")).to_have_text("2 selected")
    page.click("#retry-selected")
    expect(page.locator("#confirm")).to_contain_text("Retry the 0 failed or stalled of the 2 jobs selected?")
    expect(page.locator("#confirm")).to_contain_text("None to retry.")
    page.click("#cancel-selected")
    expect(page.locator("#confirm p").first).to_have_text("Cancel 2 jobs selected?")
    page.click("#confirm button.no")
    expect(page.locator("#confirm *")).to_have_count(0)
    assert {j.status for j in client.jobs.list(name="q")} == {"pending"}, "nothing until confirmed"
    page.click("#cancel-selected")
    page.click("#confirm button.yes")
    expect(page.locator("#bulk-result")).to_have_text("Cancelled 2 of 2 jobs.")
    expect(page.locator("#selected-count")).to_have_text("0 selected")
    expect(page.locator("#jobs .badge:text-is('CANCELLED')")).to_have_count(2)

    page.click("#cancel-all")
    expect(page.locator("#confirm p").first).to_have_text(
        "Cancel all 2 unfinished jobs this filter shows (name q)?"
    )
    page.click("#confirm button.yes")
    expect(page.locator("#bulk-result")).to_have_text("Cancelled 2 of 2 jobs.")
    assert {client.jobs.get(i).status for i in waiting} == {"cancelled"}

    page.goto(_space_url(dev, space) + "?status=FAILED")
    expect(rows).to_have_count(3)
    page.click("#retry-all")
    expect(page.locator("#confirm p").first).to_have_text(
        "Retry all 3 failed or stalled jobs this filter shows (status failed)?"
    )
    expect(page.locator("#confirm button.yes")).to_have_text("Retry 3 jobs")
    page.click("#confirm button.yes")
    expect(page.locator("#bulk-result")).to_have_text("Retried 3 of 3 jobs.")
    retried = [j for j in client.jobs.list(name="flaky") if j.retry_of]
    assert len(retried) == 3 and {j.status for j in retried} == {"pending"}


def test_settings_in_human_units_dark_mode_and_destructive_actions_set_apart(
    page: Any, dev: DevServer, client: Emit, space: str
) -> None:
    job_id = client.jobs.create("n").id
    sign_in(page, dev)
    page.goto(_space_url(dev, space, "/settings"))
    form = page.locator("#settings")
    expect(form.locator("[name=timeoutMs]")).to_have_value("5")
    expect(form.locator("[name='timeoutMs.unit'] option:checked")).to_have_text("minutes")
    expect(form.locator("[name=completedRetentionMs]")).to_have_value("7")
    expect(form.locator("[name='completedRetentionMs.unit'] option:checked")).to_have_text("days")
    expect(form.locator("[name=backoffMs]")).to_have_value("1")
    expect(form.locator("[name='backoffMs.unit'] option:checked")).to_have_text("seconds")
    form.locator("[name=failedRetentionMs]").fill("2")
    form.locator("[name='failedRetentionMs.unit']").select_option(label="days")
    form.locator("[name=keyWindowMs]").fill("90")
    form.locator("[name='keyWindowMs.unit']").select_option(label="seconds")
    form.locator("button[type=submit]").click()
    expect(page.locator(".ok")).to_have_text("Saved.")
    settings = client.spaces.get().raw
    assert (settings["failedRetentionMs"], settings["keyWindowMs"]) == (172_800_000, 90_000)
    assert settings["timeoutMs"] == 300_000, "only the fields changed are sent"
    expect(form.locator("[name=keyWindowMs]")).to_have_value("90")
    form.locator("[name=metrics]").fill("resize-image,send-email")
    form.locator("button[type=submit]").click()
    # The form drawn again from the answer: the names as the space now lists them.
    expect(form.locator("[name=metrics]")).to_have_value("resize-image, send-email")
    assert client.spaces.get().raw["metrics"] == ["resize-image", "send-email"]

    background = "() => getComputedStyle(document.body.parentElement).backgroundColor"
    page.emulate_media(color_scheme="light")
    assert page.evaluate(background) == "rgb(246, 247, 249)"
    page.emulate_media(color_scheme="dark")
    assert page.evaluate(background) == "rgb(15, 20, 25)"

    page.goto(_space_url(dev, space, f"/jobs/{job_id}"))
    cancel = page.locator("#cancel")
    expect(cancel).to_have_class(re.compile(r"\bdanger\b"))
    expect(cancel).to_have_css("color", "rgb(255, 123, 114)")  # the dark theme's red
    page.goto(_space_url(dev, space))
    expect(page.locator("#cancel-all")).to_have_class(re.compile(r"\bdanger\b"))
    expect(page.locator("#retry-all")).not_to_have_class(re.compile(r"\bdanger\b"))
    shot(page, "jobs-dark")
