"""Tasks against a real `emit dev`: one object names the job, its payload's type and its
options for the producer and the worker; `result(timeout=)` waits for what the worker
returned, or raises why there is none. And a task's handler called alone, with no server."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import emit
import pydantic
import pytest
from emit import AsyncEmit, Emit, HeldJob, JobCancelled, JobFailed, JobTimeout
from emit.testing import call, held_job

from tests.e2e.conftest import DevServer
from tests.sdk.support import FAST, running
from tests.support import PATIENCE_S


class ResizeRequest(pydantic.BaseModel):
    url: str
    width: int = pydantic.Field(gt=0)


@dataclass
class Receipt:
    invoice_id: str
    amount_cents: int


def test_a_pydantic_task_is_enqueued_worked_and_its_result_waited_for(client: Emit) -> None:
    resize = client.task("resize-image", payload=ResizeRequest, max_attempts=5, timeout=timedelta(minutes=2))
    seen: list[tuple[ResizeRequest, int]] = []

    @resize.worker(concurrency=2, **FAST)
    def handle(request: ResizeRequest, job: HeldJob[Any]) -> dict[str, Any]:
        seen.append((request, job.attempt))
        job.progress(100, "resized")
        return {"url": f"{request.url}@{request.width}"}

    assert handle.names == ["resize-image"] and handle.concurrency == 2
    run = resize.enqueue(ResizeRequest(url="s3://in/cat.png", width=640), priority=5)
    job = run.get()
    assert (job.name, job.payload, job.max_attempts, job.timeout, job.priority) == (
        "resize-image",
        {"url": "s3://in/cat.png", "width": 640},
        5,
        timedelta(minutes=2),
        5,
    )
    with running(handle):
        assert run.result(timeout=PATIENCE_S) == {"url": "s3://in/cat.png@640"}
        # A mapping of the fields is checked against the model as an instance is.
        other = resize.enqueue({"url": "s3://in/dog.png", "width": "320"})
        assert other.result(timeout=timedelta(seconds=PATIENCE_S)) == {"url": "s3://in/dog.png@320"}
    assert seen[0] == (ResizeRequest(url="s3://in/cat.png", width=640), 1)
    assert isinstance(seen[1][0], ResizeRequest) and seen[1][0].width == 320
    assert run.refresh().status == "completed" and run.wait(timeout=0).result == {
        "url": "s3://in/cat.png@640"
    }
    with pytest.raises(pydantic.ValidationError):  # refused before anything is sent
        resize.enqueue({"url": "s3://in/x.png", "width": 0})
    assert [j.id for j in client.jobs.list(name="resize-image")] == [other.id, run.id]


def test_a_dataclass_task_and_a_failure_that_raises_with_its_type(client: Emit) -> None:
    receipts = client.task("send-receipt", payload=Receipt, max_attempts=1)

    @receipts.worker(**FAST)
    def send(receipt: Receipt) -> str:
        if receipt.amount_cents <= 0:
            raise ValueError(f"bad amount {receipt.amount_cents}")
        return f"sent {receipt.invoice_id}"

    sent = receipts.enqueue(Receipt("inv_1", 4900))
    assert sent.get().payload == {"invoice_id": "inv_1", "amount_cents": 4900}
    refused = receipts.enqueue(Receipt("inv_2", 0))
    with running(send):
        assert sent.result(timeout=PATIENCE_S) == "sent inv_1"
        with pytest.raises(JobFailed) as failed:
            refused.result(timeout=PATIENCE_S)
    assert str(failed.value) == f"job {refused.id} (send-receipt) failed: ValueError: bad amount 0"
    assert failed.value.error_type == "ValueError" and failed.value.job.status == "failed"
    assert (failed.value.error or "").splitlines()[1] == "Traceback (most recent call last):"
    assert 'raise ValueError(f"bad amount {receipt.amount_cents}")' in (failed.value.error or "")
    # The same through jobs.result, for any job.
    with pytest.raises(JobFailed, match="ValueError: bad amount 0"):
        client.jobs.result(refused.id, timeout=PATIENCE_S)


def test_a_payload_the_model_refuses_fails_the_job_for_good(client: Emit) -> None:
    resize = client.task("resize-image", payload=ResizeRequest, max_attempts=5)

    @resize.worker(**FAST)
    def handle(request: ResizeRequest) -> None:
        raise AssertionError("never called")

    job_id = client.jobs.create("resize-image", {"url": "s3://in/x.png"}).id  # no width
    with running(handle), pytest.raises(JobFailed) as failed:
        client.jobs.result(job_id, timeout=PATIENCE_S)
    assert failed.value.job.attempt == 1  # unrecoverable: not retried
    assert (failed.value.error or "").startswith("payload is not a ResizeRequest: 1 validation error")


def test_result_times_out_on_a_job_nobody_works_and_raises_once_cancelled(client: Emit) -> None:
    idle = client.task("nobody-works-this")
    run = idle.enqueue({"n": 1})
    with pytest.raises(JobTimeout) as timed_out:
        run.result(timeout=timedelta(milliseconds=300))
    assert isinstance(timed_out.value, TimeoutError) and timed_out.value.job.status == "pending"
    with pytest.raises(TimeoutError):
        client.jobs.wait(run.id, timeout=0)
    assert run.cancel().status == "cancelled"
    with pytest.raises(JobCancelled) as cancelled:
        run.result(timeout=PATIENCE_S)
    assert cancelled.value.job.status == "cancelled"


def test_tasks_on_the_async_client(dev: DevServer, space: str) -> None:
    async def main() -> None:
        async with AsyncEmit(dev.url, dev.token, space) as client:
            resize = client.task("resize-image", payload=ResizeRequest, timeout=60)
            receipts = client.task("send-receipt", payload=Receipt, max_attempts=1)

            @resize.worker(**FAST)
            async def handle(request: ResizeRequest, job: HeldJob[Any]) -> int:
                await asyncio.sleep(0)
                return request.width * 2

            @receipts.worker(**FAST)
            async def send(receipt: Receipt) -> None:
                raise KeyError(receipt.invoice_id)

            run = await resize.enqueue(ResizeRequest(url="u", width=21))
            failing = await receipts.enqueue(Receipt("inv_9", 1))
            assert (await run.get()).timeout == timedelta(minutes=1)
            with pytest.raises(JobTimeout):
                await run.result(timeout=0.2)
            serving = asyncio.create_task(emit.serve(handle, send, handle_signals=False))
            try:
                assert await run.result(timeout=PATIENCE_S) == 42
                with pytest.raises(JobFailed, match="KeyError: 'inv_9'"):
                    await failing.result(timeout=PATIENCE_S)
                assert (await client.jobs.wait(run.id, timeout=PATIENCE_S)).status == "completed"
                assert await client.jobs.result(run.id) == 42
            finally:
                handle.stop()
                send.stop()
                await serving

    asyncio.run(main())


# -- no server ------------------------------------------------------------------------


def handle_resize(request: ResizeRequest, job: HeldJob[Any]) -> dict[str, Any]:
    if job.last_try:
        job.log("warn", "last try")
    job.progress(50, "halfway")
    return {"width": request.width // 2}


def test_a_task_handler_is_still_the_function_and_testable_alone() -> None:
    # A client that is never called: tasks and their workers connect only when used.
    client = Emit("http://127.0.0.1:9", "unused", "nowhere")
    resize = client.task("resize-image", payload=ResizeRequest)
    worker = resize.worker()(handle_resize)

    job = held_job({"url": "u", "width": 640}, name="resize-image")
    assert worker(ResizeRequest(url="u", width=640), job) == {"width": 320}  # called directly

    last = held_job({"url": "u", "width": 100}, attempt=3, max_attempts=3)
    ran = call(worker, last)  # as the worker would: the payload parsed first
    assert ran.completed and ran.result == {"width": 50}
    assert last.last_try and last.failures == 2 and last.messages == ["last try"]
    assert last.progress_reports == [{"percent": 50, "message": "halfway"}]

    ran = call(worker, held_job({"url": "u", "width": -1}))
    assert ran.failed and ran.unrecoverable and (ran.error or "").startswith("payload is not a ResizeRequest")
    assert held_job({"url": "u", "width": 7}).payload_as(ResizeRequest) == ResizeRequest(url="u", width=7)
    assert held_job({"invoice_id": "i", "amount_cents": 1}).payload_as(Receipt) == Receipt("i", 1)
    assert not held_job(attempt=2).last_try and held_job(attempt=2).max_attempts is None
    with pytest.raises(ValueError, match="failures"):
        held_job(attempt=2, failures=2)
    client.close()


def test_a_task_refuses_what_it_cannot_be() -> None:
    client = Emit("http://127.0.0.1:9", "unused", "nowhere")
    with pytest.raises(TypeError, match="pydantic model or a dataclass"):
        client.task("x", payload=dict)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown option"):
        client.task("x", keyy="k")
    with pytest.raises(TypeError, match="unknown option"):
        client.task("x").enqueue({}, prio=1)
    with pytest.raises(TypeError, match="payload as its first argument"):
        client.task("x").worker()(lambda: None)
    with pytest.raises(TypeError, match="takes an object of its fields"):
        client.task("x", payload=Receipt).enqueue([1, 2])  # type: ignore[arg-type]
    client.close()
