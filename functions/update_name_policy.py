"""PATCH /v1/spaces/{space}/names/{name}/policy: set fields of the name's own policy."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, body, entrypoint, make_app, ok, path_name
from shared.runtime import runtime
from shared.schema import PolicyPatch, parse

app = make_app()


@app.patch("/v1/spaces/<space>/names/<name>/policy")
def update_name_policy(space: str, name: str) -> Response:
    authorize(app, "admin", space)
    job_name = path_name(name)
    policy = runtime().policies.patch(space, job_name, parse(PolicyPatch, body(app)))
    return ok(render.answer(answers.NamePolicy, policy))


lambda_handler = entrypoint(app)
