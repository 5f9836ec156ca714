"""`emit.testing`: a handler called on a made-up held job, and the pytest plugin used as a
team would (the README's example file, run by pytest in a directory of its own)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import emit
import httpx
import pytest
from emit.testing import call, call_async, held_job, start_dev

from tests.sdk.test_readme_python import example
from tests.support import PATIENCE_S

ROOT = Path(__file__).resolve().parents[2]


def test_a_held_job_records_what_its_handler_reports_and_call_says_how_it_ended() -> None:
    def handler(job: emit.HeldJob) -> dict:
        job.progress(10)
        job.progress(90, "nearly")
        job.log("warning", "slow", source="db", metadata={"ms": 900})
        job.event({"step": "done"})
        return {"got": job.payload, "attempt": job.attempt, "name": job.name}

    job = held_job({"n": 1}, name="sum", attempt=2)
    ran = call(handler, job)
    assert ran.completed and not ran.failed and ran.job is job
    assert ran.result == {"got": {"n": 1}, "attempt": 2, "name": "sum"}
    assert job.progress_reports == [{"percent": 10}, {"percent": 90, "message": "nearly"}]
    assert job.lines == [{"level": "WARN", "message": "slow", "source": "db", "metadata": {"ms": 900}}]
    assert job.messages == ["slow"] and job.events == [{"step": "done"}]
    assert held_job().id != held_job().id and held_job().attempt == 1


def test_call_maps_exceptions_as_the_worker_does() -> None:
    def unrecoverable(job: emit.HeldJob) -> None:
        raise emit.Unrecoverable("declined")

    def broken(job: emit.HeldJob) -> None:
        raise KeyError("amountCents")

    def released(job: emit.HeldJob) -> None:
        raise emit.Release

    def bad_progress(job: emit.HeldJob) -> None:
        job.progress(150)  # checked as on a worker: the attempt fails with the mistake

    ran = call(unrecoverable)
    assert ran.failed and ran.unrecoverable and ran.error == "declined" and ran.retry_after is None
    ran = call(broken)
    assert ran.failed and not ran.unrecoverable and (ran.error or "").startswith("KeyError: 'amountCents'\n")
    assert call(released).released
    ran = call(bad_progress)
    assert ran.failed and "percent must be a number from 0 to 100" in (ran.error or "")
    ran = call(lambda job: {1, 2})  # a result that is not JSON
    assert ran.failed and ran.unrecoverable and "not JSON" in (ran.error or "")


def test_call_takes_async_handlers_workers_and_a_stopped_job() -> None:
    async def handler(job: emit.HeldJob) -> str:
        await asyncio.sleep(0)
        return "stopped" if job.signal.is_set() else "ran"

    assert call(handler).result == "ran"
    job = held_job()
    job.stop("finished")  # as a cancel would
    assert call(handler, job).result == "stopped" and job.stop_reason == "finished"
    worker = emit.worker(names=["n"])(lambda job: job.payload * 2)
    assert call(worker, held_job(21)).result == 42
    assert asyncio.run(call_async(handler)).result == "ran"


PLUGIN_USE = """
import emit
from emit.testing import work


@emit.worker(names=["greet"])
def greet(job):
    return f"hello {job.payload}"


def test_a_worker_from_the_environment(emit_env, emit_dev):
    client = emit.Emit()  # EMIT_URL, EMIT_TOKEN and EMIT_SPACE: emit_dev's, and the test's space
    assert client.url == emit_dev.url and client.space == emit_env
    created = client.jobs.create("greet", "ada")
    [job] = work(client, greet, created.id)
    assert job.status == "completed" and job.result == "hello ada"
    client.close()


def test_each_test_has_a_space_of_its_own(emit_client, emit_space):
    assert emit_client.space == emit_space and list(emit_client.jobs.list()) == []
"""


def test_the_plugin_runs_the_readme_example_against_a_real_emit_dev(tmp_path: Path) -> None:
    """The README's test file and one more, in a directory of their own, run by pytest with
    the plugin: one emit dev for the session (started by the fixture, a process of its own)."""
    (tmp_path / "test_workers.py").write_text(example("testing"))
    (tmp_path / "test_plugin_use.py").write_text(PLUGIN_USE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMIT_") and k != "PYTEST_ADDOPTS"}
    # This checkout's SDK and service, for pytest and for the emit dev it starts.
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "sdk"), env.get("PYTHONPATH", "")])
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "emit.testing.plugin", "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=4 * PATIENCE_S,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "6 passed" in ran.stdout, ran.stdout


def test_the_test_clock_is_only_there_when_asked_for_and_wants_the_admin_token() -> None:
    with start_dev() as dev:
        clock = f"{dev.url}/_dev/clock"
        assert httpx.get(clock).status_code == 401
        assert (
            httpx.post(clock, json={"advanceMs": 1}, headers={"authorization": "Bearer no"}).status_code
            == 401
        )
        admin = {"authorization": f"Bearer {dev.token}"}
        assert httpx.post(clock, json={"advanceMs": -1}, headers=admin).status_code == 400
        assert httpx.post(clock, json={}, headers=admin).status_code == 400
        before = dev.now()
        after = dev.advance(timedelta(days=2))
        assert after - before >= timedelta(days=2)
        assert dev.now() >= after
        with pytest.raises(ValueError, match="only goes forward"):
            dev.advance(-timedelta(days=1))
    with start_dev(test_clock=False) as plain:
        assert httpx.get(f"{plain.url}/_dev/clock").status_code == 404
        with pytest.raises(RuntimeError, match="no test clock"):
            plain.advance(timedelta(days=1))
