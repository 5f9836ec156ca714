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
what a follower sees (status, attempt, progress, finish, line count), made by the store
from what it read (`JobStore.watched`), so it changes exactly when there is something
new to show, with nothing stored to keep it. The use case answers values (`MintedLink`,
`Followed`); the handlers render them (`shared.render`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass

from shared import limits
from shared.errors import NotFound, Unauthenticated
from shared.ids import is_ulid
from shared.job import Job
from shared.jobs.context import Context
from shared.schema import SPACE_PATTERN
from shared.store.port import Line, Watched

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


@dataclass(frozen=True)
class MintedLink:
    url: str
    """`GET /v1/follow/{token}` on the API's own address."""
    token: str
    expires_at_ms: int


@dataclass(frozen=True)
class Followed:
    """A job as its follower sees it (`shared.render.followed` shows it)."""

    job: Job
    """Without payload; with its result (completed) or its error (failed, stalled)."""
    lines: list[Line]
    """Its log lines from the follower's `afterSeq` on, at most `PAGE_LINES`."""
    next_seq: int
    version: str
    """Changes whenever what a follower is shown does (`JobStore.watched`)."""


# -- links ------------------------------------------------------------------------


def mint(ctx: Context, space: str, job_id: str, *, ttl_ms: int, base_url: str) -> MintedLink:
    """A link to follow the job for `ttl_ms`; the job must exist now."""
    if ctx.jobs.job(space, job_id, now_ms=ctx.clock.now_ms()) is None:
        raise NotFound(f"job {job_id} does not exist in space {space}")
    key = ctx.secrets.get(SECRET, create=True)
    assert key is not None
    expires = ctx.clock.now_ms() + ttl_ms
    fields = f"{FORMAT}.{space}.{job_id}.{expires}"
    token = f"{fields}.{_mac(key, fields)}"
    return MintedLink(f"{base_url}/v1/follow/{token}", token, expires)


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


def follow(ctx: Context, token: str, *, after_seq: int, wait_ms: int, version: str | None) -> Followed:
    """The job as its follower sees it, with its lines from `after_seq`. Given the
    `version` of the last answer, waits up to `wait_ms` for the job to change.

    Never past the link's expiry: a wait that reaches it with nothing new answers as the
    link does from then on (`401`, expired), rather than show the job once more to a
    holder whose capability has ended."""
    link = open_link(ctx, token)
    deadline = min(ctx.clock.now_ms() + min(wait_ms, limits.MAX_FOLLOW_WAIT_MS), link.expires_at_ms)
    watched = first = _watched(ctx, link, seen=None)
    # Lines already there (the last answer was a full page, or they landed after the job's
    # write it saw) answer at once.
    lines = _lines(ctx, link, watched.job, after_seq)
    # The claims' pauses (`shared.config`): how soon, and at most how late, a change is seen.
    pause = ctx.config.poll_ms
    while version is not None and not lines and watched.version == version:
        now = ctx.clock.now_ms()
        if now >= deadline:
            break
        ctx.clock.sleep(min(pause, deadline - now) / 1000)
        pause = min(pause * 2, ctx.config.poll_max_ms)
        if ctx.clock.now_ms() >= link.expires_at_ms:
            raise Unauthenticated(_EXPIRED)
        watched = _watched(ctx, link, seen=version)
        if watched.version != version:
            lines = _lines(ctx, link, watched.job, after_seq)
    if not watched.outcome:
        # Unchanged since the first read (a finished job's value is read once a wait, not
        # once a look): that read shows the same, with its result or error.
        watched = first
    return Followed(watched.job, lines, lines[-1].seq + 1 if lines else after_seq, watched.version)


def _watched(ctx: Context, link: Link, *, seen: str | None) -> Watched:
    watched = ctx.jobs.watched(link.space, link.job_id, now_ms=ctx.clock.now_ms(), seen=seen)
    if watched is None:
        raise NotFound(f"job {link.job_id} does not exist in space {link.space}")
    return watched


def _lines(ctx: Context, link: Link, job: Job, after_seq: int) -> list[Line]:
    if job.line_count <= after_seq:
        return []
    return ctx.journal.lines(link.space, link.job_id, after_seq, PAGE_LINES)


def _mac(key: bytes, fields: str) -> str:
    digest = hmac.new(key, fields.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
