"""The README's Python examples, run as written against a real `emit dev`.

As with the quickstart, the only change made is a port: the callback receiver's, to one
that is free.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import emit
import httpx
from emit.units import utc as at

from tests.e2e.conftest import DevServer, free_port
from tests.support import PATIENCE_S, eventually

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- python:{} -->"


def example(name: str) -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(re.escape(MARK.format(name)) + r"\s*```python\n(.*?)```", text, re.S)
    assert block, f"README.md: no python block after {MARK.format(name)}"
    return block.group(1)


@contextmanager
def started(script: str, env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        env=os.environ | env | {"PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield process
    finally:
        # Once: a stop lets go of an idle long poll (a second signal, arriving after the
        # worker has put back the default handlers on its way out, would kill it).
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=PATIENCE_S)
        except subprocess.TimeoutExpired:
            process.kill()


def test_the_producer_and_worker_examples_take_a_job_to_completed(dev: DevServer) -> None:
    env = {"EMIT_URL": dev.url, "EMIT_TOKEN": dev.token}
    with started(example("worker"), env) as worker:
        produced = subprocess.run(
            [sys.executable, "-c", example("producer")],
            cwd=ROOT,
            env=os.environ | env,
            capture_output=True,
            text=True,
            timeout=PATIENCE_S,
            check=False,
        )
    assert produced.returncode == 0, produced.stderr
    job_id, outcome = produced.stdout.splitlines()[0].split()
    assert outcome == "new"
    assert "message='charging'" in produced.stdout  # its log line, as the worker wrote it
    assert "status='completed'" in produced.stdout
    assert worker.returncode == 0  # SIGTERM: a clean shutdown
    with emit.Emit(dev.url, dev.token, "billing") as client:
        job = client.jobs.get(job_id)
    assert (job.status, job.result) == ("completed", {"chargeId": "ch_inv_1042"})
    assert job.progress == emit.Progress(50, "card accepted")


def test_the_tasks_example_enqueues_waits_for_the_result_and_raises_the_failure(dev: DevServer) -> None:
    env = {"EMIT_URL": dev.url, "EMIT_TOKEN": dev.token}
    script = example("tasks")
    with started(script, env, "worker") as worker:
        produced = subprocess.run(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env=os.environ | env,
            capture_output=True,
            text=True,
            timeout=PATIENCE_S * 2,
            check=False,
        )
    assert produced.returncode == 0, produced.stderr
    first, second = produced.stdout.splitlines()
    job_id, result = first.split(" ", 1)
    assert result == "{'url': 'https://example.com/cat.png?w=640'}"
    assert second == "ValueError | ValueError: bad width 0"
    assert worker.returncode == 0  # SIGTERM: a clean shutdown
    with emit.Emit(dev.url, dev.token, "media") as client:
        job = client.jobs.get(job_id)
        assert (job.name, job.max_attempts, job.payload) == (
            "resize-image",
            5,
            {"url": "https://example.com/cat.png", "width": 640},
        )
        [failed] = list(client.jobs.list(name="resize-image", status="failed"))
        error = client.jobs.get(failed.id).error or ""
        assert error.splitlines()[1:] == [  # as the README shows it (run with -c: no file, no source line)
            "Traceback (most recent call last):",
            '  File "<string>", line 23, in resize_image',
        ]


def test_the_async_worker_example_serves_two_task_types_in_one_process(dev: DevServer) -> None:
    env = {"EMIT_URL": dev.url, "EMIT_TOKEN": dev.token}
    with emit.Emit(dev.url, dev.token, "billing") as client:
        statement = client.jobs.create("render-statement", {"month": "2030-06"}).id
        with started(example("async-worker"), env) as worker:
            assert worker.stdout is not None
            made = worker.stdout.readline().split()  # "created <id>", printed before it serves
            assert made[0] == "created", made
            done = eventually(lambda: all(client.jobs.get(i).finished for i in (made[1], statement)))
            assert done
        assert client.jobs.get(made[1]).result == {"sent": "inv_1042"}
        assert client.jobs.get(statement).progress == emit.Progress(100, "rendered")
    assert worker.returncode == 0  # SIGTERM: a clean shutdown


def test_the_callback_receiver_example_accepts_only_signed_callbacks() -> None:
    port = free_port()
    script = example("receiver")
    assert "8788" in script
    secret = "a-webhook-secret-for-the-readme"
    with started(script.replace("8788", str(port)), {"EMIT_WEBHOOK_SECRET": secret}) as receiver:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/webhooks/emit"
        body = json.dumps({"jobId": "01M3QSMMXQ00ZSGYA6VWM3NGQA", "status": "completed", "result": {}})
        signed = {"Emit-Signature": emit.sign(secret, body), "Content-Type": "application/json"}
        stale = {"Emit-Signature": emit.sign(secret, body, now=at(int(time.time() * 1000) - 600_000))}

        assert httpx.post(url, content=body, headers=signed).status_code == 204
        assert httpx.post(url, content=body.replace("completed", "failed"), headers=signed).status_code == 401
        assert httpx.post(url, content=body, headers=stale).status_code == 401
        assert httpx.post(url, content=body).status_code == 401
    assert receiver.stdout is not None
    assert "job 01M3QSMMXQ00ZSGYA6VWM3NGQA completed" in receiver.stdout.read()


def wait_for_port(port: int) -> None:
    def listening() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    eventually(listening)


def test_the_flow_control_example_pauses_reads_and_resets_a_name(dev: DevServer) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", example("flow-control")],
        cwd=ROOT,
        env=os.environ | {"EMIT_URL": dev.url, "EMIT_TOKEN": dev.token},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert "WaitingOn(reason='paused', until_ms=None, key=None)" in ran.stdout
    assert "send-receipt 1 1 ('paused',)" in ran.stdout
    with emit.Emit(dev.url, dev.token, "billing") as client:
        assert client.names.policy("send-receipt").overridden == ()


def test_the_schedules_example_makes_pauses_and_triggers_a_schedule(dev: DevServer) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", example("schedules")],
        cwd=ROOT,
        env=os.environ | {"EMIT_URL": dev.url, "EMIT_TOKEN": dev.token},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    first, made = ran.stdout.splitlines()
    assert first.endswith(("T07:00:00+00:00", "T08:00:00+00:00")), first
    assert made == "morning-report True"
    with emit.Emit(dev.url, dev.token, "billing") as client:
        assert client.schedules.get("morning-report").paused


def test_the_traces_example_sends_its_spans_context_with_the_job(dev: DevServer) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", example("traces")],
        cwd=ROOT,
        env=os.environ | {"EMIT_URL": dev.url, "EMIT_TOKEN": dev.token},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    traceparent, trace_id = ran.stdout.splitlines()
    assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}", traceparent), traceparent
    assert traceparent[3:35] == trace_id
