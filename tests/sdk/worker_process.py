"""A worker in a process of its own, for the shutdown tests: `python -m tests.sdk.worker_process`.

Its handler prints `started <id>`, then works for `HANDLER_SECONDS` (stopping early when
told to), takes `LINGER_SECONDS` more (0 unless set) and prints `stopped <id> <reason>`;
the worker gives it `GRACE` seconds at shutdown.
"""

from __future__ import annotations

import os
import time
from typing import Any

import emit


@emit.worker(names=["shutdown"], poll_wait=0.2, report_interval=0.1, grace=float(os.environ["GRACE"]))
def handle(job: emit.HeldJob[Any]) -> str:
    print(f"started {job.id}", flush=True)
    told = job.signal.wait(float(os.environ["HANDLER_SECONDS"]))
    time.sleep(float(os.environ.get("LINGER_SECONDS", "0")))
    print(f"stopped {job.id} {job.stop_reason if told else 'finished'}", flush=True)
    return "finished in time"


if __name__ == "__main__":
    handle.run()
    print("exited", flush=True)
