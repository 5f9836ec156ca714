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
    public: bool = False
    """Served without a token (the API's own description); every other route needs one."""
    gateway_path: str | None = None
    """The path API Gateway routes by, where the API's own has a part after a parameter in
    one segment (`{id}:trigger`): a gateway's parameter is a whole segment, so its route
    takes the segment whole and the function's own router matches the rest. None: `path`."""

    @property
    def routed_by(self) -> str:
        return self.gateway_path or self.path


# Sizing. 256 MB is the default: a request parses, makes a few DynamoDB calls and renders,
# and below that Lambda's share of CPU makes cold starts (pydantic, Powertools) slow.
# Timeouts stay under the HTTP API's 30 s integration timeout, so a function always
# answers before the gateway gives up.
ROUTES: tuple[Route, ...] = (
    # Validates and writes up to 1,000 jobs, each with up to 4 MiB of payload: room for a
    # 6 MB request held twice (raw and parsed), and time for S3 writes.
    Route("POST", "/v1/spaces/{space}/jobs", "create_jobs", memory_mb=1024, timeout_s=29),
    # Up to 1,000 jobs read across the space's partitions and rendered.
    Route("GET", "/v1/spaces/{space}/jobs", "list_jobs", memory_mb=512, timeout_s=29),
    # One job with payload and result of up to 4 MiB each, from S3 at worst.
    Route("GET", "/v1/spaces/{space}/jobs/{id}", "get_job", memory_mb=512, timeout_s=15),
    Route("GET", "/v1/spaces/{space}/jobs/{id}/lines", "list_lines"),
    Route("GET", "/v1/spaces/{space}/jobs/{id}/events", "list_events"),
    # A long poll waits up to 25 s, mostly asleep: the smallest size that keeps cold starts
    # quick, since a waiting worker keeps this function busy (billed by memory x time).
    Route("POST", "/v1/spaces/{space}/jobs:claim", "claim_jobs", memory_mb=256, timeout_s=29),
    # Up to 1,000 reports, with results of up to 4 MiB and 1,000 log lines each.
    Route("POST", "/v1/spaces/{space}/jobs:report", "report_jobs", memory_mb=512, timeout_s=29),
    # Up to 1,000 conditional writes, one per id.
    Route("POST", "/v1/spaces/{space}/jobs:cancel", "cancel_jobs", timeout_s=29),
    # Up to 1,000 old jobs read (with their payloads) and as many new jobs written, each in
    # a transaction with its retry mark: the create path's sizing.
    Route("POST", "/v1/spaces/{space}/jobs:retry", "retry_jobs", memory_mb=1024, timeout_s=29),
    # Flow control: a name's policy (two reads; a write lists the name first), and the
    # space's diagnostics (counts from the ready index, at most 10,000 entries a name).
    Route("GET", "/v1/spaces/{space}/names/{name}/policy", "get_name_policy"),
    Route("PATCH", "/v1/spaces/{space}/names/{name}/policy", "update_name_policy"),
    Route("POST", "/v1/spaces/{space}/names/{name}/policy:reset", "reset_name_policy"),
    Route("GET", "/v1/spaces/{space}/diagnostics", "get_diagnostics", memory_mb=512, timeout_s=29),
    # The last hour from the stream's counts: the space's names (a query), then each name's
    # minutes (a query a name, 16 at once).
    Route("GET", "/v1/spaces/{space}/metrics", "get_metrics", memory_mb=512, timeout_s=29),
    # A follow link: the job must exist (a read), and the first link ever makes the secret.
    Route("POST", "/v1/spaces/{space}/jobs/{id}/follow-links", "create_follow_link"),
    # Following waits up to 25 s like a claim, reading the job item about once a second.
    Route("GET", "/v1/follow/{token}", "follow_job", timeout_s=29, public=True),
    # The spaces a token may use: one query of the listing (or one batch of the token's own),
    # then one batch of two reads a space on the page.
    Route("GET", "/v1/spaces", "list_spaces", memory_mb=512, timeout_s=29),
    Route("GET", "/v1/spaces/{space}", "get_space"),
    Route("PATCH", "/v1/spaces/{space}", "update_space"),
    # Schedules: each in a partition of its own, listed in its space's listing. A write reads
    # the schedule, files its next time in the timer book and writes it on its version; a
    # trigger makes one job through the create path.
    Route("GET", "/v1/spaces/{space}/schedules", "list_schedules"),
    Route("GET", "/v1/spaces/{space}/schedules/{id}", "get_schedule"),
    Route("PUT", "/v1/spaces/{space}/schedules/{id}", "put_schedule"),
    Route("PATCH", "/v1/spaces/{space}/schedules/{id}", "update_schedule"),
    Route("DELETE", "/v1/spaces/{space}/schedules/{id}", "delete_schedule"),
    Route(
        "POST",
        "/v1/spaces/{space}/schedules/{id}:trigger",
        "trigger_schedule",
        memory_mb=512,
        gateway_path="/v1/spaces/{space}/schedules/{id}",
    ),
    Route("POST", "/v1/tokens", "create_token"),
    Route("GET", "/v1/tokens", "list_tokens"),
    Route("DELETE", "/v1/tokens/{id}", "revoke_token"),
    # The dashboard: static files packaged with their functions (shared/dashboard.py), no data.
    Route("GET", "/", "get_dashboard", public=True),
    Route("GET", "/dashboard/{file}", "get_dashboard_file", public=True),
    # The OpenAPI document, built once per warm function from the models in shared/.
    Route("GET", "/v1/openapi.json", "get_openapi", public=True),
)
