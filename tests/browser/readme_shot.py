"""`make screenshot`: the README's picture of the dashboard (docs/dashboard.png), taken in
Chromium from a fresh `emit dev` holding a few demonstration jobs."""

from __future__ import annotations

from pathlib import Path

from emit import Emit
from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import CHROMIUM, PATIENCE_MS
from tests.dev import start_dev

OUT = Path(__file__).resolve().parents[2] / "docs" / "dashboard.png"


def main() -> None:
    dev = start_dev()
    try:
        with Emit(dev.url, dev.token, "billing") as client:
            for n in range(3):
                client.jobs.create("charge-invoice", {"invoiceId": f"inv_{1040 + n}"})
            failed = client.jobs.create("send-receipt", {"to": "ada@example.com"}, max_attempts=1).id
            job = client.jobs.create("render-statement", {"month": "2025-11", "pages": 12}).id
            for held in client.jobs.claim(count=10, names=["send-receipt", "render-statement"]):
                me = {"id": held.id, "attempt": held.attempt}
                if held.id == failed:
                    client.jobs.report([me | {"fail": {"error": "SMTP 421: try again later"}}])
                    continue
                lines = [{"level": "INFO", "message": f"rendered page {p} of 12"} for p in range(1, 8)]
                client.jobs.report(
                    [me | {"progress": {"percent": 58, "message": "page 7 of 12"}, "lines": lines}]
                )
        with sync_playwright() as driver:
            browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1000, "height": 720})
            page.set_default_timeout(PATIENCE_MS)
            page.goto(dev.url + "/")
            page.fill("#token", dev.token)
            page.click("#sign-in button[type=submit]")
            expect(page.locator("h1")).to_have_text("Spaces")
            page.goto(f"{dev.url}/#/s/billing/jobs/{job}")
            expect(page.locator("#lines li")).to_have_count(7)
            OUT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(OUT))
            browser.close()
        print(f"wrote {OUT}")
    finally:
        dev.stop()


if __name__ == "__main__":
    main()
