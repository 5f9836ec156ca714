"""Follow links: a read-only capability for one job, that a browser uses with no API token.

A link's token is `v1.<space>.<job id>.<expires at ms>.<mac>`, where the mac is an
HMAC-SHA256 of the fields before it under a secret the service made for itself
(`shared.store.secrets`). Signed rather than stored: making a link writes nothing, and
checking one reads nothing but the job (the secret is read once per process). The price
is that a link cannot be revoked on its own: it ends when it expires, or when the job
is past retention. The fields are in clear: a link shows its space's name and its job's
id, which the follower sees anyway.

Following waits like a claim does: the job item is read (eventually consistent, half a
read unit: a job item is kept to about 1 KiB) with pauses that grow to a second,
until its version differs from the follower's or the wait ends. A version is a digest of
what a follower sees (status, attempt, progress, finish, line count), so it changes
exactly when there is something new to show, with nothing stored to keep it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

from shared import answers, limits, render
from shared.errors import NotFound, Unauthenticated
from shared.ids import is_ulid
from shared.jobs.context import Context
from shared.machine import JobStatus
from shared.schema import SPACE_PATTERN
from shared.store import keys
from shared.store.codec import job_from_item, purged
from shared.store.dynamo import Item

FORMAT = "v1"
"""The token's layout and what its mac covers; a new layout gets a new prefix."""
SECRET = "follow-links"
"""The purpose of the service secret that signs follow links."""
PAGE_LINES = 100
"""Log lines in one answer at most; `nextSeq` asks for the rest."""

_SPACE = re.compile(SPACE_PATTERN)
_NOT_VALID = "token: the follow link is not valid"
_EXPIRED = "token: the follow link has expired"


@dataclass(frozen=True)
class Link:
    space: str
    job_id: str
    expires_at_ms: int


# -- links ------------------------------------------------------------------------


def mint(ctx: Context, space: str, job_id: str, *, ttl_ms: int, base_url: str) -> dict[str, Any]:
    """A link to follow the job for `ttl_ms`; the job must exist now."""
    _item(ctx, space, job_id)
    key = ctx.secrets.get(SECRET, create=True)
    assert key is not None
    expires = ctx.clock.now_ms() + ttl_ms
    fields = f"{FORMAT}.{space}.{job_id}.{expires}"
    token = f"{fields}.{_mac(key, fields)}"
    return {"url": f"{base_url}/v1/follow/{token}", "token": token, "expiresAtMs": expires}


def open_link(ctx: Context, token: str) -> Link:
    """The job a token lets its holder follow; `401` when it is forged, altered or expired."""
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != FORMAT:
        raise Unauthenticated(_NOT_VALID)
    key = ctx.secrets.get(SECRET, create=False)
    if key is None or not hmac.compare_digest(_mac(key, ".".join(parts[:4])), parts[4]):
        raise Unauthenticated(_NOT_VALID)
    _, space, job_id, expires = parts[:4]
    # Signed by the service, so well formed; checked anyway, as everything from outside is.
    if not (_SPACE.fullmatch(space) and is_ulid(job_id) and expires.isascii() and expires.isdigit()):
        raise Unauthenticated(_NOT_VALID)
    if int(expires) <= ctx.clock.now_ms():
        raise Unauthenticated(_EXPIRED)
    return Link(space, job_id, int(expires))


def follow(ctx: Context, token: str, *, after_seq: int, wait_ms: int, version: str | None) -> dict[str, Any]:
    """The job as its follower sees it, with its lines from `after_seq`. Given the
    `version` of the last answer, waits up to `wait_ms` for the job to change.

    Never past the link's expiry: a wait that reaches it with nothing new answers as the
    link does from then on (`401`, expired), rather than show the job once more to a
    holder whose capability has ended."""
    link = open_link(ctx, token)
    deadline = min(ctx.clock.now_ms() + min(wait_ms, limits.MAX_FOLLOW_WAIT_MS), link.expires_at_ms)
    item = _item(ctx, link.space, link.job_id, consistent=False)
    # Lines already there (the last answer was a full page, or they landed after the job's
    # write it saw) answer at once.
    lines = _lines(ctx, link, item, after_seq)
    # The claims' pauses (`shared.config`): how soon, and at most how late, a change is seen.
    pause = ctx.config.poll_ms
    while version is not None and not lines and _version(item) == version:
        now = ctx.clock.now_ms()
        if now >= deadline:
            break
        ctx.clock.sleep(min(pause, deadline - now) / 1000)
        pause = min(pause * 2, ctx.config.poll_max_ms)
        if ctx.clock.now_ms() >= link.expires_at_ms:
            raise Unauthenticated(_EXPIRED)
        item = _item(ctx, link.space, link.job_id, consistent=False)
        if _version(item) != version:
            lines = _lines(ctx, link, item, after_seq)
    return _answer(ctx, link, item, lines, after_seq)


def _lines(ctx: Context, link: Link, item: Item, after_seq: int) -> list[dict[str, Any]]:
    if item.get("lineCount", 0) <= after_seq:
        return []
    out = []
    for seq, line in ctx.journal.lines(link.space, link.job_id, after_seq, PAGE_LINES):
        shown = {"seq": seq, **line}
        if "metadata" in shown:
            shown["metadata"] = json.loads(shown["metadata"])
        out.append(shown)
    return out


def _answer(
    ctx: Context, link: Link, item: Item, lines: list[dict[str, Any]], after_seq: int
) -> dict[str, Any]:
    status = JobStatus(item["status"])
    job = job_from_item(link.space, item)
    fields: dict[str, Any] = {
        "id": job.id,
        "name": job.name,
        "status": status.value,
        "attempt": job.attempt,
        "progress": (
            answers.Progress(percent=job.progress.percent, message=job.progress.message)
            if job.progress
            else None
        ),
        "createdAtMs": job.created_at_ms,
        "finishedAtMs": job.finished_at_ms,
    }
    if status == JobStatus.COMPLETED:
        (result,) = ctx.jobs.blobs.read_many(link.space, [(item, "result")])
        fields["result"] = json.loads(result) if result is not None else None
    elif status in (JobStatus.FAILED, JobStatus.STALLED):
        (error,) = ctx.jobs.blobs.read_many(link.space, [(item, "error")])
        if error is not None:
            fields["error"] = error.decode()
    fields |= {
        "lines": lines,
        "nextSeq": lines[-1]["seq"] + 1 if lines else after_seq,
        "version": _version(item),
    }
    return render.answer(answers.FollowedJob, fields)


def _item(ctx: Context, space: str, job_id: str, *, consistent: bool = True) -> Item:
    item = ctx.jobs.db.get(keys.job(space, job_id), consistent=consistent)
    if item is None and not consistent:
        item = ctx.jobs.db.get(keys.job(space, job_id), consistent=True)  # made a moment ago
    if item is None or purged(item, ctx.clock.now_ms()):
        raise NotFound(f"job {job_id} does not exist in space {space}")
    return item


def _mac(key: bytes, fields: str) -> str:
    digest = hmac.new(key, fields.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _version(item: Item) -> str:
    """What a follower sees of the job, digested: it differs whenever there is news."""
    seen = [
        item["status"],
        item["attempt"],
        item.get("progress"),
        item.get("finishedAtMs"),
        item.get("lineCount", 0),
    ]
    return hashlib.sha256(json.dumps(seen, default=str, sort_keys=True).encode()).hexdigest()[:16]
