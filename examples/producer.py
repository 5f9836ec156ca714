"""Create a `charge-invoice` job and follow it to the end, against `make dev`:

    EMIT_TOKEN=dev-token-change-me python examples/producer.py [invoice-id]

With `examples/worker.py` running, it prints the job's progress and log lines as they
happen. Run it twice with the same invoice id: the key makes the second a duplicate.
"""

from __future__ import annotations

import os
import sys

import emit

client = emit.Emit(
    os.environ.get("EMIT_URL", "http://127.0.0.1:8787"),
    space=os.environ.get("EMIT_SPACE", "billing"),
)

invoice = sys.argv[1] if len(sys.argv) > 1 else "inv_1042"
created = client.jobs.create(
    "charge-invoice", {"invoiceId": invoice, "amountCents": 4900}, key=f"charge-{invoice}"
)
print(f"job {created.id} ({created.outcome})")
for update in client.jobs.follow(created.id, interval=0.5):
    if isinstance(update, emit.Line):
        print(f"  {update.level:<5} {update.message}")
    else:
        shown = f"{update.progress.percent:g}% {update.progress.message}" if update.progress else ""
        print(f"{update.status} {shown}".rstrip())
job = client.jobs.get(created.id)
print("result:", job.result if job.status == "completed" else job.error)
