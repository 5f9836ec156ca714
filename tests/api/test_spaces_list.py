"""`GET /v1/spaces`: only the spaces a token may use, a page at a time, with `inFlight`."""

from __future__ import annotations

from shared.runtime import Runtime
from tests.conftest import mint
from tests.support import Api


def _all(api: Api, limit: int) -> list[list[dict]]:
    pages, cursor = [], None
    while True:
        answer = api.get("/v1/spaces", query={"limit": limit} | ({"cursor": cursor} if cursor else {}))
        assert answer.status == 200, answer
        pages.append(answer.body["spaces"])
        cursor = answer.body["cursor"]
        if cursor is None:
            return pages


def test_every_space_in_name_order_a_page_at_a_time(api: Api) -> None:
    assert api.get("/v1/spaces").body == {"spaces": [], "cursor": None}
    for space in ("delta", "alpha", "charlie", "bravo", "echo"):
        api.created(f"/v1/spaces/{space}")
    pages = _all(api, 2)
    assert [[s["name"] for s in page] for page in pages] == [
        ["alpha", "bravo"],
        ["charlie", "delta"],
        ["echo"],
    ]
    # No cap: counted from the stream, which these tests never run (tests/timers/test_counts.py does).
    assert all(s["inFlight"] == 0 for page in pages for s in page)


def test_in_flight_is_counted_under_a_cap(api: Api) -> None:
    api.patch("/v1/spaces/capped", {"maxInFlight": 10})
    api.created("/v1/spaces/capped")
    api.created("/v1/spaces/capped")
    api.created("/v1/spaces/open")
    assert api.get("/v1/spaces").body["spaces"] == [
        {"name": "capped", "inFlight": 2},
        {"name": "open", "inFlight": 0},  # no cap: the stream's count, not run here
    ]


def test_a_token_sees_only_its_own_spaces_that_exist(api: Api, rt: Runtime) -> None:
    for space in ("a1", "a2", "b1", "b2"):
        api.created(f"/v1/spaces/{space}")
    reader = api.as_token(mint(rt, ["read"], ["b2", "a2", "never"]))
    assert [[s["name"] for s in page] for page in _all(reader, 1)] == [["a2"], ["b2"]]
    worker = api.as_token(mint(rt, ["work"], ["a1"]))
    assert reader.get("/v1/spaces", query={"limit": 5}).body["cursor"] is None
    answer = worker.get("/v1/spaces")
    assert (answer.status, answer.body["message"]) == (403, "the token may not read")
    assert api.as_token(mint(rt, ["admin"], ["a1"])).get("/v1/spaces").body["spaces"] == [
        {"name": "a1", "inFlight": 0}
    ]


def test_bad_paging_is_a_400_naming_the_parameter(api: Api) -> None:
    for query, message in (
        ({"limit": 1001}, "limit: must be an integer from 1 to 1000"),
        ({"limit": 0}, "limit: must be an integer from 1 to 1000"),
        ({"cursor": "Not A Space"}, "cursor: is not a cursor this API gave"),
    ):
        answer = api.get("/v1/spaces", query=query)
        assert (answer.status, answer.body["message"]) == (400, message)
    assert api.get("/v1/spaces", token=None).status == 401
