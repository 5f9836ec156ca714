"""`emit dev` serves concurrent requests to one function from threads of one process (a
browser asks for a dozen dashboard files at once): each must see its own request."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools.event_handler import Response

from devserver.gateway import LambdaContext
from shared.http import HttpApp, make_app

AT_ONCE = 8


def request(path: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {},
        "requestContext": {
            "http": {"method": "GET", "path": path, "sourceIp": "127.0.0.1"},
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }


def test_first_requests_at_once_each_get_their_own_route_arguments() -> None:
    """Every request has begun (its route arguments kept) before any handler runs: with one
    context for all, each would read the last one's; and the route's middleware stack,
    built on its first request, is built once however many first requests come at once."""
    app: HttpApp = make_app()
    all_in = threading.Barrier(AT_ONCE)

    def hold(app: Any, next_middleware: Any) -> Any:
        all_in.wait(timeout=60)
        return next_middleware(app)

    @app.get("/files/<name>", middlewares=[hold])
    def serve(name: str) -> Response:
        return Response(200, "text/plain", name)

    paths = [f"/files/f{i}" for i in range(AT_ONCE)]
    with ThreadPoolExecutor(AT_ONCE) as pool:
        answers = list(pool.map(lambda p: app.resolve(request(p), LambdaContext("files", 30, 128)), paths))
    assert [(a["statusCode"], a["body"]) for a in answers] == [(200, f"f{i}") for i in range(AT_ONCE)]
