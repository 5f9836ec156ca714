"""GET /v1/follow/{token}: one job as a person follows it, with no API token, from any page.

The token in the path is the capability (`shared.jobs.follow`); CORS lets any origin read the
answer, on this route alone.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import CORSConfig, Response

from shared import limits, render
from shared.http import entrypoint, make_app, ok, query, query_int
from shared.jobs.follow import follow
from shared.runtime import runtime

app = make_app(cors=CORSConfig(allow_origin="*", allow_headers=[], max_age=86_400))


# `no-store`: a job's state now, under a url that is a credential (errors: `no-cache`).
@app.get("/v1/follow/<token>", cache_control="no-store")
def follow_job(token: str) -> Response:
    after = query_int(app, "afterSeq", default=0, low=0, high=2**31 - 1)
    wait = query_int(app, "waitMs", default=0, low=0, high=limits.MAX_FOLLOW_WAIT_MS)
    followed = follow(runtime().context, token, after_seq=after, wait_ms=wait, version=query(app, "version"))
    return ok(render.followed(followed))


lambda_handler = entrypoint(app)
