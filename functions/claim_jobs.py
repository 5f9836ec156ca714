"""POST /v1/spaces/{space}/jobs:claim: hand out up to `count` jobs, waiting up to `waitMs`."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.metrics import MetricUnit

from shared import render
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.jobs.claim import claim
from shared.observability import annotate_traces, metrics
from shared.runtime import runtime
from shared.schema import ClaimRequest, parse

app = make_app()


@app.post("/v1/spaces/<space>/jobs:claim")
def claim_jobs(space: str) -> Response:
    authorize(app, "work", space)
    request = parse(ClaimRequest, body(app))
    jobs = claim(
        runtime().context,
        space,
        count=request.count,
        names=request.names,
        wait_ms=request.waitMs,
        lease_ms=request.leaseMs,
        show=render.claimed,
    )
    metrics.add_metric("JobsClaimed", MetricUnit.Count, len(jobs))
    annotate_traces(j.get("traceparent") for j in jobs)
    # Each job is rendered once, as the claim measured it (`render.claimed`): checking the
    # envelope again would walk every payload once more, on the largest answers.
    return ok({"jobs": jobs} | runtime().wake.shown())


lambda_handler = entrypoint(app)
