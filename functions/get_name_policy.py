"""GET /v1/spaces/{space}/names/{name}/policy: the name's policy in force, and what it sets itself."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, entrypoint, make_app, ok, path_name
from shared.runtime import runtime

app = make_app()


@app.get("/v1/spaces/<space>/names/<name>/policy")
def get_name_policy(space: str, name: str) -> Response:
    authorize(app, "read", space)
    return ok(render.answer(answers.NamePolicy, runtime().policies.describe(space, path_name(name))))


lambda_handler = entrypoint(app)
