"""Jobs as the API shows them: upper-case statuses, times in ms, secrets never."""

from __future__ import annotations

from typing import Any

from shared.machine import Job, JobStatus


def job(j: Job, *, bodies: bool = True) -> dict[str, Any]:
    """The job resource; `bodies=False` leaves out payload and result (list pages)."""
    out: dict[str, Any] = {
        "id": j.id,
        "space": j.space,
        "name": j.name,
        "status": j.status.value,
        "attempt": j.attempt,
        "failures": j.failures,
        "maxAttempts": j.max_attempts,
        "timeoutMs": j.timeout_ms,
        "backoffMs": j.backoff.base_ms,
        "backoff": {"kind": j.backoff.kind, "maxMs": j.backoff.max_ms, "jitter": j.backoff.jitter},
        "key": j.key,
        "createdAtMs": j.created_at_ms,
        "runAtMs": j.run_at_ms,
        "finishedAtMs": j.finished_at_ms,
        "progress": {"percent": j.progress.percent, "message": j.progress.message} if j.progress else None,
        "callback": callback(j),
        "lineCount": j.line_count,
        "eventCount": j.event_count,
    }
    if j.status == JobStatus.PENDING:
        out["readyAtMs"] = j.ready_at_ms
    if j.status == JobStatus.RUNNING and j.lease_until_ms is not None:
        out["leaseUntilMs"] = str(j.lease_until_ms)
    if j.error is not None and j.status != JobStatus.COMPLETED:
        out["error"] = j.error
    if bodies:
        out["payload"] = j.payload
        if j.status == JobStatus.COMPLETED:
            out["result"] = j.result
    return out


def callback(j: Job) -> dict[str, Any] | None:
    if j.callback is None:
        return None
    # Header values can carry credentials: only their names are ever shown again.
    return {"url": j.callback.url, "headers": dict.fromkeys(j.callback.headers, "")}


def delivery(item: dict[str, Any] | None) -> dict[str, Any]:
    """A finished job's callback delivery: PENDING (until delivered or given up), DELIVERED, GAVE_UP."""
    if item is None:
        return {"state": "PENDING", "attempts": 0}
    shown = {"state": item["state"], "attempts": item["attempts"]}
    for field in ("lastStatus", "lastError", "lastAttemptAtMs", "deliveredAtMs"):
        if item.get(field) is not None:
            shown[field] = item[field]
    if item["state"] == "PENDING":
        shown["nextAtMs"] = item["nextAtMs"]
    return shown


def claimed(j: Job, payload: Any) -> dict[str, Any]:
    return {
        "id": j.id,
        "attempt": j.attempt,
        "name": j.name,
        "payload": payload,
        "leaseUntilMs": str(j.lease_until_ms),
    }


def rejection(reason: str, message: str) -> dict[str, Any]:
    return {"rejection": {"reason": reason, "message": message}}
