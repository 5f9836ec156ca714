"""SIGTERM on a worker process: it stops claiming, lets handlers finish within the grace
period, and releases what it still holds, so the jobs go to another worker at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from emit import Emit
from emit.worker import WORKER_STOPPED

from tests.e2e.conftest import DevServer
from tests.sdk.support import eventually
from tests.support import PATIENCE_S

ROOT = Path(__file__).resolve().parents[2]


def start_worker(
    dev: DevServer, space: str, *, grace: float, handler_seconds: float, linger: float = 0.0
) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        EMIT_URL=dev.url,
        EMIT_TOKEN=dev.token,
        EMIT_SPACE=space,
        GRACE=str(grace),
        HANDLER_SECONDS=str(handler_seconds),
        LINGER_SECONDS=str(linger),
        PYTHONUNBUFFERED="1",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "tests.sdk.worker_process"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_start(worker: subprocess.Popen[str], job_id: str) -> str:
    """The worker's output up to its handler's start."""
    assert worker.stdout is not None
    read = []
    for line in worker.stdout:
        read.append(line)
        if line.strip() == f"started {job_id}":
            return "".join(read)
    pytest.fail("the worker exited before its handler started")


def stopped_cleanly(worker: subprocess.Popen[str], job_id: str, sig: signal.Signals = signal.SIGTERM) -> str:
    """Signal the worker once its handler has started; its output, once it has exited 0."""
    try:
        before = wait_for_start(worker, job_id)
        worker.send_signal(sig)
        output, _ = worker.communicate(timeout=PATIENCE_S)
    finally:
        worker.kill()
    assert worker.returncode == 0, output
    return before + output


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_releases_the_jobs_a_worker_still_holds_after_the_grace_period(
    dev: DevServer, client: Emit, space: str, sig: signal.Signals
) -> None:
    job_id = client.jobs.create("shutdown", max_attempts=1).id
    worker = start_worker(dev, space, grace=0.5, handler_seconds=60)
    output = stopped_cleanly(worker, job_id, sig)
    assert f"stopped {job_id} shutdown" in output and "exited" in output
    # Run as a program with no logging set up, the worker says what it does on stderr.
    assert "emit.worker: worker handle started: names shutdown, concurrency 1" in output
    assert f"emit.worker: claimed job {job_id} (shutdown) attempt 1" in output
    job = client.jobs.get(job_id)
    assert (job.status, job.attempt, job.failures) == ("pending", 1, 0)  # released: the attempt isn't counted
    eventually(lambda: client.jobs.claim(count=1, names=["shutdown"]))  # and at once claimable again


def test_a_signal_lets_a_running_handler_finish_within_the_grace_period(
    dev: DevServer, client: Emit, space: str
) -> None:
    job_id = client.jobs.create("shutdown").id
    worker = start_worker(dev, space, grace=20, handler_seconds=1)
    output = stopped_cleanly(worker, job_id)
    assert f"stopped {job_id} finished" in output
    job = client.jobs.get(job_id)
    assert (job.status, job.result) == ("completed", "finished in time")


def test_a_signal_waits_for_told_handlers_to_return_before_the_process_exits(
    dev: DevServer, client: Emit, space: str
) -> None:
    """A handler told to stop may take a moment to get there: the release goes out at once,
    and the process exits only after the handler has returned (its result dropped)."""
    job_id = client.jobs.create("shutdown", max_attempts=1).id
    worker = start_worker(dev, space, grace=0.2, handler_seconds=60, linger=1.0)
    output = stopped_cleanly(worker, job_id)
    stopped = output.find(f"stopped {job_id} shutdown")
    assert 0 <= stopped < output.find("exited"), output
    job = client.jobs.get(job_id)
    assert (job.status, job.failures) == ("pending", 0), "released; the handler's late result is dropped"


def test_a_signal_fails_an_at_most_once_job_whose_handler_started_rather_than_release_it(
    dev: DevServer, client: Emit, space: str
) -> None:
    """Released, another worker would run it again: the job fails for good instead, saying
    the worker stopped, whatever attempts it has left."""
    job_id = client.jobs.create("shutdown", max_attempts=5, guarantee="at_most_once").id
    worker = start_worker(dev, space, grace=0.2, handler_seconds=60)
    output = stopped_cleanly(worker, job_id)
    assert f"stopped {job_id} shutdown" in output
    job = client.jobs.get(job_id)
    assert (job.status, job.error, job.attempt, job.guarantee) == (
        "failed",
        WORKER_STOPPED,
        1,
        "at_most_once",
    )
    assert client.jobs.claim(count=1, names=["shutdown"]) == []
