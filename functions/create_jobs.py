"""POST /v1/spaces/{space}/jobs: create one job, an array, or {"jobs": [...]}."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.metrics import MetricUnit

from shared import answers
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.jobs.create import create
from shared.observability import annotate_traces, metrics
from shared.runtime import runtime
from shared.schema import jobs_in

app = make_app()


@app.post("/v1/spaces/<space>/jobs")
def create_jobs(space: str) -> Response:
    authorize(app, "create", space)
    jobs, batch = jobs_in(body(app), traceparent_header=app.current_event.headers.get("traceparent"))
    annotate_traces(j.traceparent for j in jobs)
    outcomes = create(runtime().context, space, jobs, batch=batch)
    metrics.add_metric("JobsCreated", MetricUnit.Count, sum(o.new for o in outcomes))
    created = [answers.Created(id=o.id, outcome="NEW" if o.new else "DUPLICATE") for o in outcomes]
    return ok(answers.CreatedBatch(jobs=created).shown() if batch else created[0].shown())


lambda_handler = entrypoint(app)
