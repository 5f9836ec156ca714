"""`examples/`: the worker starts with one command and serves what the producer creates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import emit

from tests.e2e.conftest import DevServer
from tests.support import PATIENCE_S

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_worker_serves_the_example_producer(dev: DevServer, space: str) -> None:
    env = os.environ | {"EMIT_URL": dev.url, "EMIT_TOKEN": dev.token, "EMIT_SPACE": space}
    worker = subprocess.Popen(
        [sys.executable, "examples/worker.py"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        produced = subprocess.run(
            [sys.executable, "examples/producer.py", "inv_77"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=PATIENCE_S,
            check=False,
        )
    finally:
        # Ctrl-C, as its docstring says, once: a stop lets go of an idle long poll.
        worker.send_signal(signal.SIGINT)
        output, _ = worker.communicate(timeout=PATIENCE_S)
    assert produced.returncode == 0, produced.stderr
    assert "info  charging" in produced.stdout and "completed 100% receipt sent" in produced.stdout
    assert worker.returncode == 0, output
    assert "stopping" in output  # it logged its graceful shutdown
    with emit.Emit(dev.url, dev.token, space) as client:
        [job] = client.jobs.list()
        assert client.jobs.get(job.id).result["chargeId"] == "ch_inv_77"
