"""POST /v1/spaces/{space}/names/{name}/policy:reset: every field back to the space's default."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import answers, render
from shared.http import authorize, entrypoint, make_app, ok, path_name
from shared.runtime import runtime

app = make_app()


@app.post("/v1/spaces/<space>/names/<name>/policy:reset")
def reset_name_policy(space: str, name: str) -> Response:
    authorize(app, "admin", space)
    return ok(render.answer(answers.NamePolicy, runtime().policies.reset(space, path_name(name))))


lambda_handler = entrypoint(app)
