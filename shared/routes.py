"""Every endpoint: its route, the function that serves it, and that function's sizing.

The CDK app makes one Lambda function and one API Gateway route from each entry, and
`emit dev` routes requests to the same handlers from the same table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    """API Gateway's form: `{space}` for a path parameter."""
    function: str
    """The module in `functions/` whose `lambda_handler` serves it."""
    memory_mb: int = 256
    timeout_s: int = 10


ROUTES: tuple[Route, ...] = (
    # Creates validate and write up to 1,000 jobs (4 MiB payloads each): more memory, more time.
    Route("POST", "/v1/spaces/{space}/jobs", "create_jobs", memory_mb=1024, timeout_s=29),
    Route("GET", "/v1/spaces/{space}/jobs", "list_jobs", memory_mb=512, timeout_s=29),
    Route("GET", "/v1/spaces/{space}/jobs/{id}", "get_job"),
    Route("GET", "/v1/spaces/{space}/jobs/{id}/lines", "list_lines"),
    Route("GET", "/v1/spaces/{space}/jobs/{id}/events", "list_events"),
    # A long poll waits up to 25 s, under the HTTP API's 30 s integration timeout.
    Route("POST", "/v1/spaces/{space}/jobs:claim", "claim_jobs", memory_mb=1024, timeout_s=29),
    Route("POST", "/v1/spaces/{space}/jobs:report", "report_jobs", memory_mb=512, timeout_s=29),
    Route("POST", "/v1/spaces/{space}/jobs:cancel", "cancel_jobs", timeout_s=29),
    Route("GET", "/v1/spaces/{space}", "get_space"),
    Route("PATCH", "/v1/spaces/{space}", "update_space"),
    Route("POST", "/v1/tokens", "create_token"),
    Route("GET", "/v1/tokens", "list_tokens"),
    Route("DELETE", "/v1/tokens/{id}", "revoke_token"),
)
