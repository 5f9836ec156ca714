"""A worker for `charge-invoice` jobs, to start with one command against `make dev`:

    EMIT_TOKEN=dev-token-change-me python examples/worker.py

`EMIT_URL` defaults to `make dev`'s http://127.0.0.1:8787 and `EMIT_SPACE` to billing.
Create a job for it with `python examples/producer.py`, and stop it with Ctrl-C: it
finishes what it is running (or releases it after the grace period) before it exits.
"""

from __future__ import annotations

import logging
import os
import random
import time
from typing import Any

import emit

client = emit.Emit(
    os.environ.get("EMIT_URL", "http://127.0.0.1:8787"),
    space=os.environ.get("EMIT_SPACE", "billing"),
)


@client.worker(names=["charge-invoice"], concurrency=4)
def charge_invoice(job: emit.HeldJob[dict[str, Any]]) -> dict[str, Any] | None:
    invoice = job.payload
    job.log("info", "charging", metadata={"invoiceId": invoice["invoiceId"]})
    if invoice.get("amountCents", 0) <= 0:
        raise emit.Unrecoverable("nothing to charge")
    for step, message in enumerate(("card checked", "charge authorized", "receipt sent"), start=1):
        if job.signal.wait(random.uniform(0.2, 0.6)):  # a pause that ends early when told to stop
            return None
        job.progress(round(step / 3 * 100), message)
    job.event({"charged": invoice["amountCents"]})
    return {"chargeId": f"ch_{invoice['invoiceId']}", "at": time.time()}


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    charge_invoice.run()
