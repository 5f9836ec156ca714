"""Inputs that once crashed a handler: each is a 400 naming the field, never a 500."""

from __future__ import annotations

import pytest

from shared.runtime import Runtime
from tests.support import Api

JOBS = "/v1/spaces/odd/jobs"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"name": "n", "payload": NaN}', "body: must be valid JSON (NaN is not JSON)"),
        (b'{"name": "n", "payload": Infinity}', "body: must be valid JSON (Infinity is not JSON)"),
        (b'{"name": "n", "payload": 1e999}', "body: must be valid JSON (1e999 is out of range)"),
        (b'{"name": "n", "payload": "\\ud800"}', "body: has a \\u escape that is not a valid character"),
        (b"[" * 100_000 + b"]" * 100_000, "body: is nested too deeply"),
        (b'\xff\xfe{"name": "n"}', "body: must be UTF-8 JSON"),
    ],
)
def test_bodies_that_are_not_strict_json(api: Api, raw: bytes, message: str) -> None:
    answer = api.request("POST", JOBS, raw=raw)
    assert (answer.status, answer.body["message"]) == (400, message)


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        (f"{JOBS}:report", {"id": "x", "attempt": 10**40}, "attempt: must be at most 2147483648"),
        (
            JOBS,
            {"name": "n", "callback": {"url": "http://[::1"}},
            "callback.url: must be an http or https URL",
        ),
        (
            JOBS,
            {"name": "n", "callback": {"url": "https://a.example", "headers": {"x-tenant": "café"}}},
            "callback.headers: the value of x-tenant must be printable ASCII",
        ),
        (
            JOBS,
            {"name": "n", "callback": {"url": "https://a.example", "headers": {"bad name": "v"}}},
            "callback.headers: 'bad name' is not a header name",
        ),
        (
            JOBS,
            {"name": "n", "callback": {"url": "https://a.example", "headers": {"Host": "evil"}}},
            "callback.headers: Host is set by emit itself",
        ),
        (
            JOBS,
            {
                "name": "n",
                "callback": {"url": "https://a.example", "headers": {f"h{i}": "v" * 4000 for i in range(3)}},
            },
            "callback.headers: must be at most 8192 bytes in all",
        ),
        (
            f"{JOBS}:report",
            {"id": "x", "attempt": 1, "lines": [{"level": "INFO", "message": "é" * 2049}]},
            "lines[0].message: must be at most 4096 bytes of UTF-8",
        ),
    ],
)
def test_fields_that_once_crashed_are_named(api: Api, path: str, body: dict, message: str) -> None:
    answer = api.post(path, body)
    assert (answer.status, answer.body["message"]) == (400, message)


@pytest.mark.parametrize("query", [{"limit": "²"}, {"cursor": "²"}])
def test_digits_that_are_not_ascii(api: Api, query: dict) -> None:
    job_id = api.post(JOBS, {"name": "n"}).body["id"]
    assert api.get(f"{JOBS}/{job_id}/lines", query=query).status == 400


def test_a_bad_space_name_without_a_token_is_401_first(api: Api) -> None:
    assert api.as_token(None).post("/v1/spaces/Bad/jobs", {"name": "n"}).status == 401


def test_a_fault_in_the_middle_of_a_report_batch_still_frees_the_finished_jobs_room(
    rt: Runtime, api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.patch("/v1/spaces/odd", {"maxInFlight": 5})
    api.post(JOBS, [{"name": "n"}, {"name": "n"}])
    first, second = api.post(f"{JOBS}:claim", {"count": 2}).body["jobs"]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the store failed")

    monkeypatch.setattr(rt.journal, "append_lines", broken)
    reports = [
        {"id": first["id"], "attempt": 1, "complete": {}},
        {"id": second["id"], "attempt": 1, "complete": {}, "lines": [{"level": "INFO", "message": "m"}]},
    ]
    failed = api.post(f"{JOBS}:report", reports)
    assert failed.status == 500 and failed.body["code"] == "Internal"
    assert "the store failed" not in failed.body["message"], "a 500 never shows exception text"
    assert api.get("/v1/spaces/odd").body["inFlight"] == 0, "both jobs finished; neither holds room"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/dashboard/a`b"),
        ("GET", '/v1/follow/x"y'),
        ("GET", "/v1/spaces/x/jobs/a\\b"),
        ("GET", "/v1/spaces/x/jobs/\u00a9\u2192/lines"),
        ("POST", '/v1/spaces/x"/jobs'),
        ("PATCH", "/v1/spaces/x`"),
        ("DELETE", "/v1/tokens/a\\b"),
        ("GET", "/v1/spaces/x/names/\u2192/policy"),
    ],
)
def test_a_path_part_the_handler_cannot_take_is_404_never_500(api: Api, method: str, path: str) -> None:
    """The gateway's route takes any path part; Powertools' resolver does not take a quote,
    a backtick, a backslash or raw non-ASCII. Such a request is no resource (404, as the
    OpenAPI document says), with no token needed, never the 500 an alarm counts."""
    for token in (None, True):
        answer = api.request(method, path, token=token)
        assert (answer.status, answer.body["code"]) == (404, "NotFound"), (token, answer)
