"""What API Gateway does for the deployed API: match a route, build the HTTP API (payload
format 2.0) proxy event, invoke the route's Lambda handler, and read its answer."""

from __future__ import annotations

import base64
import importlib
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from shared.routes import ROUTES, Route


@dataclass(frozen=True)
class Matched:
    route: Route
    params: dict[str, str]


def _pattern(path: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(path)) + "$")


_COMPILED = [(route, _pattern(route.path)) for route in ROUTES]


def match(method: str, path: str) -> Matched | str | None:
    """The route for a request; the string "method" when the path exists for another method."""
    path_known = False
    for route, pattern in _COMPILED:
        found = pattern.match(path)
        if found:
            path_known = True
            if route.method == method:
                return Matched(route, found.groupdict())
    return "method" if path_known else None


def event(
    matched: Matched,
    *,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """An API Gateway HTTP API proxy event (payload format 2.0), as AWS sends it."""
    now = time.time()
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        lowered[key] = f"{lowered[key]},{value}" if key in lowered else value
    # API Gateway tells a function how the request came in; here, always plain HTTP.
    lowered["x-forwarded-proto"] = "http"
    params: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        params[name] = f"{params[name]},{value}" if name in params else value
    route_key = f"{matched.route.method} {matched.route.path}"
    text_body = True
    try:
        body_text = body.decode()
    except UnicodeDecodeError:
        text_body = False
        body_text = base64.b64encode(body).decode()
    out: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": lowered,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": lowered.get("host", "localhost"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": route_key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": not text_body,
    }
    if params:
        out["queryStringParameters"] = params
    if matched.params:
        out["pathParameters"] = matched.params
    if body:
        out["body"] = body_text
    return out


class LambdaContext:
    """The few context attributes Powertools reads."""

    def __init__(self, function: str, timeout_s: int, memory_mb: int) -> None:
        self.function_name = f"emit-{function}"
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:local:000000000000:function:{self.function_name}"
        self.aws_request_id = uuid.uuid4().hex
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def invoke(matched: Matched, proxy_event: dict[str, Any]) -> dict[str, Any]:
    """Call the route's handler as Lambda would, and answer its proxy response."""
    module = importlib.import_module(f"functions.{matched.route.function}")
    context = LambdaContext(matched.route.function, matched.route.timeout_s, matched.route.memory_mb)
    answer: dict[str, Any] = module.lambda_handler(proxy_event, context)
    return answer


def response_body(answer: Mapping[str, Any]) -> bytes:
    body = answer.get("body") or ""
    return base64.b64decode(body) if answer.get("isBase64Encoded") else str(body).encode()
