"""POST /v1/spaces/{space}/jobs:retry: a new job for each failed job, at most once each."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.metrics import MetricUnit

from shared import answers, render
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.jobs.outcomes import Retried
from shared.jobs.retry import retry
from shared.observability import metrics
from shared.runtime import runtime
from shared.schema import ids_in

app = make_app()


@app.post("/v1/spaces/<space>/jobs:retry")
def retry_jobs(space: str) -> Response:
    authorize(app, "admin", space)
    outcomes = retry(runtime().context, space, ids_in(body(app)))
    metrics.add_metric(
        "JobsCreated", MetricUnit.Count, sum(isinstance(o, Retried) and o.new for o in outcomes)
    )
    return ok(render.outcomes(answers.RetryOutcomes, outcomes))


lambda_handler = entrypoint(app)
