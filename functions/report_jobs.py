"""POST /v1/spaces/{space}/jobs:report: one report, an array, or {"reports": [...]}."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.jobs.outcomes import Applied
from shared.jobs.report import report
from shared.observability import annotate_traces
from shared.runtime import runtime
from shared.schema import reports_in

app = make_app()


@app.post("/v1/spaces/<space>/jobs:report")
def report_jobs(space: str) -> Response:
    authorize(app, "work", space)
    outcomes = report(runtime().context, space, reports_in(body(app)))
    annotate_traces(o.traceparent for o in outcomes if isinstance(o, Applied))
    return ok(render.outcomes(answers.Outcomes, outcomes))


lambda_handler = entrypoint(app)
