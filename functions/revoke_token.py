"""DELETE /v1/tokens/{id}: revoke a token at once."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared.http import authorize, entrypoint, make_app, no_content
from shared.runtime import runtime

app = make_app()


@app.delete("/v1/tokens/<token_id>")
def revoke_token(token_id: str) -> Response:
    authorize(app, "admin")
    runtime().tokens.revoke(token_id)
    return no_content()


lambda_handler = entrypoint(app)
