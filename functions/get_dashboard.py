"""GET /: the dashboard's page (no token: the page signs in itself, then calls the API)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from shared import dashboard
from shared.http import entrypoint, make_app

app = make_app()
FOLDER = dashboard.directory(__file__)


@app.get("/")
def get_dashboard() -> Response:
    text, kind = dashboard.read(FOLDER, "index.html")
    return Response(200, kind, text, headers=dict(dashboard.HEADERS))


lambda_handler = entrypoint(app)
