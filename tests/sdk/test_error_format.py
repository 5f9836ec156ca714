"""A handler's exception as its attempt's error: `Type: message` first, then the last
frames of its traceback, all within the 4 KiB the API keeps, frames cut from the top."""

from __future__ import annotations

from typing import Any

from emit import Emit, HeldJob, JobFailed
from emit.results import MAX_ERROR_BYTES, describe, error_type
from emit.testing import call

from tests.sdk.support import FAST, running
from tests.support import PATIENCE_S


class Declined(Exception):
    pass


def dive(depth: int, message: str) -> None:
    if depth == 0:
        raise ValueError(message)
    dive(depth - 1, message)


def ping(depth: int, message: str) -> None:
    if depth == 0:
        raise ValueError(message)
    pong(depth - 1, message)


def pong(depth: int, message: str) -> None:
    ping(depth, message)  # frames alternate, so none is folded into "repeated N more times"


def raised(fn: Any, *args: Any) -> BaseException:
    try:
        fn(*args)
    except BaseException as exc:
        return exc
    raise AssertionError("did not raise")


def test_a_short_traceback_is_kept_whole() -> None:
    text = describe(raised(dive, 2, "bad size"))
    first, title, *frames = text.splitlines()
    assert (first, title) == ("ValueError: bad size", "Traceback (most recent call last):")
    assert sum("in dive" in line for line in frames) == 3 and "in raised" in frames[0]
    assert frames[-1].strip() == "raise ValueError(message)"


def test_a_deep_traceback_is_cut_from_the_top_within_4_kib() -> None:
    assert "[Previous line repeated 497 more times]" in describe(raised(dive, 500, "bad size"))
    text = describe(raised(ping, 200, "bad size"))
    assert len(text.encode()) <= MAX_ERROR_BYTES
    first, title, *frames = text.splitlines()
    assert first == "ValueError: bad size"
    assert title.startswith("Traceback (most recent call last, ") and title.endswith(" frames cut):")
    assert frames[-1].strip() == "raise ValueError(message)"  # the innermost frame is kept
    assert len(text.encode()) > MAX_ERROR_BYTES - 200  # as many as fit
    assert "in raised" not in text  # the outermost went first


def test_a_huge_message_keeps_its_first_line_cut_and_no_frames() -> None:
    text = describe(raised(dive, 3, "é" * 10_000))
    assert len(text.encode()) <= MAX_ERROR_BYTES
    assert text.startswith("ValueError: éé") and text.endswith("...") and "\n" not in text


def test_types_outside_the_builtins_are_named_with_their_module() -> None:
    text = describe(Declined("card declined"))  # never raised: no traceback at all
    assert text == f"{__name__}.Declined: card declined"
    assert error_type(text) == f"{__name__}.Declined"
    assert describe(KeyError()) == "KeyError" and error_type("KeyError") == "KeyError"
    assert error_type("card declined by the bank") is None and error_type(None) is None


def test_call_reports_the_error_as_the_worker_would() -> None:
    def handle(job: HeldJob[Any]) -> None:
        ping(200, "deep")

    ran = call(handle)
    assert ran.failed and not ran.unrecoverable and (ran.error or "").startswith("ValueError: deep\n")
    assert len((ran.error or "").encode()) <= MAX_ERROR_BYTES


def test_the_error_stored_on_the_job_has_its_type_and_a_bounded_traceback(client: Emit) -> None:
    job_id = client.jobs.create("deep", max_attempts=1).id

    @client.worker(names=["deep"], **FAST)
    def handle(job: HeldJob[Any]) -> None:
        ping(200, "x" * 1_000)

    with running(handle):
        try:
            client.jobs.result(job_id, timeout=PATIENCE_S)
        except JobFailed as failed:
            error = failed.error or ""
        else:
            raise AssertionError("completed")
    job = client.jobs.get(job_id)
    assert job.error == error and job.attempts[-1].error == error[:100]  # an attempt's: its start
    assert len(error.encode()) <= MAX_ERROR_BYTES
    first, title, *frames = error.splitlines()
    assert first == "ValueError: " + "x" * 1_000
    assert "frames cut" in title and frames[-1].strip() == "raise ValueError(message)"
    assert len(error.encode()) > MAX_ERROR_BYTES - 200
