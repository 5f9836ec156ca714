"""POST /v1/spaces/{space}/jobs/{id}/follow-links: a link to follow one job without a token."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import render
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.jobs.follow import mint
from shared.runtime import runtime
from shared.schema import NewFollowLink, parse

app = make_app()


@app.post("/v1/spaces/<space>/jobs/<job_id>/follow-links")
def create_follow_link(space: str, job_id: str) -> Response:
    authorize(app, "read", space)
    request = parse(NewFollowLink, body(app) if app.current_event.body else {})
    link = mint(runtime().context, space, job_id, ttl_ms=request.ttlMs, base_url=_own_address())
    return ok(render.follow_link(link), status=201)


def _own_address() -> str:
    """The API's address as this request reached it: API Gateway names its domain and says
    it was https (`emit dev` says http)."""
    event = app.current_event
    scheme = event.headers.get("x-forwarded-proto", "https")
    return f"{scheme}://{event.request_context.domain_name}"


lambda_handler = entrypoint(app)
