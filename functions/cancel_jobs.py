"""POST /v1/spaces/{space}/jobs:cancel: cancel unfinished jobs by id."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, body, entrypoint, make_app, ok
from shared.jobs.cancel import cancel
from shared.runtime import runtime
from shared.schema import ids_in

app = make_app()


@app.post("/v1/spaces/<space>/jobs:cancel")
def cancel_jobs(space: str) -> Response:
    authorize(app, "admin", space)
    outcomes = cancel(runtime().context, space, ids_in(body(app)))
    return ok(render.outcomes(answers.Outcomes, outcomes))


lambda_handler = entrypoint(app)
