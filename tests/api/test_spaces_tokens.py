"""Space settings, tokens, and authentication, through the handlers."""

from __future__ import annotations

import pytest

from shared.auth import CACHE_MS
from shared.clock import ManualClock
from shared.runtime import Runtime
from tests.conftest import mint
from tests.support import Api

SPACE = "/v1/spaces/billing"


def test_a_space_appears_with_its_first_job(api: Api) -> None:
    assert api.get(SPACE).status == 404
    api.post(f"{SPACE}/jobs", {"name": "n"})
    body = api.get(SPACE).body
    assert body["space"] == "billing" and body["inFlight"] == 0, "no cap: the stream's count, not run here"
    assert body["maxAttempts"] == 4 and body["keyWindowMs"] == 600_000 and body["unclaimedMs"] == 604_800_000
    assert body["maxEvents"] == 1_000 and body["timeoutMs"] == 300_000
    assert body["completedRetentionMs"] == 604_800_000 and body["failedRetentionMs"] == 2_592_000_000
    assert body["maxInFlight"] is None and body["webhookSecret"] == {"set": False}


def test_patch_creates_sets_and_resets(api: Api) -> None:
    body = api.patch(SPACE, {"maxAttempts": 7, "unclaimedMs": None, "webhookSecret": "s" * 32}).body
    assert body["maxAttempts"] == 7 and body["unclaimedMs"] is None
    assert body["webhookSecret"] == {"set": True}, "the secret is write-only"
    body = api.patch(SPACE, {"maxAttempts": None, "backoff": {"jitter": True}}).body
    assert body["maxAttempts"] == 4 and body["backoff"] == {
        "kind": "exponential",
        "maxMs": 3_600_000,
        "jitter": True,
    }
    assert api.patch(SPACE, {"unclaimedMs": 120_000}).body["unclaimedMs"] == 120_000


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"keyWindowMs": 86_400_001}, "keyWindowMs: must be at most 86400000"),
        ({"maxInFlight": 0}, "maxInFlight: must be at least 1"),
        ({"webhookSecret": "short"}, "webhookSecret: must be at least 16 characters"),
        ({"maxEvent": 3}, "maxEvent: is not a known field"),
    ],
)
def test_bad_settings(api: Api, body: dict, message: str) -> None:
    answer = api.patch(SPACE, body)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_a_bad_space_name_is_400(api: Api) -> None:
    answer = api.post("/v1/spaces/Billing/jobs", {"name": "n"})
    assert (answer.status, answer.body["message"]) == (400, "space: must be 1-64 of a-z 0-9 - _")


def test_tokens_are_minted_listed_and_revoked(api: Api) -> None:
    minted = api.post("/v1/tokens", {"name": "worker", "scopes": ["work"], "spaces": ["billing"]})
    assert minted.status == 201
    token = minted.body["token"]
    assert token.startswith(f"emit_{minted.body['id']}_")
    listed = {t["id"]: t for t in api.get("/v1/tokens").body["tokens"]}
    assert listed[minted.body["id"]] == {
        "id": minted.body["id"],
        "name": "worker",
        "scopes": ["work"],
        "spaces": ["billing"],
        "createdAtMs": minted.body["createdAtMs"],
    }
    worker = api.as_token(token)
    assert worker.post(f"{SPACE}/jobs:claim", {"count": 1}).status == 200
    assert api.delete(f"/v1/tokens/{minted.body['id']}").status == 204
    assert worker.post(f"{SPACE}/jobs:claim", {"count": 1}).status == 401
    assert api.delete(f"/v1/tokens/{minted.body['id']}").status == 404


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"scopes": []}, "scopes: must have at least 1 items"),
        ({"scopes": ["root"]}, "scopes[0]: must be one of 'create', 'read', 'work' or 'admin'"),
        ({"scopes": ["read"], "spaces": ["Bad"]}, "spaces[0]: must be 1-64 of a-z 0-9 - _"),
    ],
)
def test_bad_tokens(api: Api, body: dict, message: str) -> None:
    answer = api.post("/v1/tokens", body)
    assert (answer.status, answer.body["message"]) == (400, message)


def test_tokens_need_admin_on_all_spaces(rt: Runtime, api: Api) -> None:
    space_admin = api.as_token(mint(rt, ["admin"], ["billing"]))
    assert space_admin.get("/v1/tokens").status == 403
    assert space_admin.post("/v1/tokens", {"scopes": ["read"]}).status == 403
    assert space_admin.get(SPACE).status in (200, 404)


@pytest.mark.parametrize(
    "token",
    [None, "", "garbage", "emit_nope_nope", "emit_01j00000000000000000000000_" + "0" * 64],
)
def test_missing_or_unknown_tokens_are_401(api: Api, token: str | None) -> None:
    answer = api.as_token(token).get(f"{SPACE}/jobs")
    assert answer.status == 401 and answer.body["code"] == "Unauthenticated"


def test_a_right_id_with_a_wrong_secret_is_401(rt: Runtime, api: Api) -> None:
    token = mint(rt, ["read"])
    forged = token[: -len("0" * 64)] + "0" * 64
    assert api.as_token(forged).get(f"{SPACE}/jobs").status == 401


def test_a_token_outside_its_spaces_is_403(rt: Runtime, api: Api) -> None:
    answer = api.as_token(mint(rt, ["read"], ["other"])).get(f"{SPACE}/jobs")
    assert answer.status == 403 and answer.body["code"] == "PermissionDenied"


def test_space_settings_need_admin(rt: Runtime, api: Api) -> None:
    assert api.as_token(mint(rt, ["create", "read", "work"])).patch(SPACE, {"maxAttempts": 2}).status == 403


def test_the_dev_token_is_admin_everywhere(monkeypatch: pytest.MonkeyPatch, rt: Runtime, api: Api) -> None:
    monkeypatch.setattr(rt.tokens, "dev_token", "local-dev-token")
    assert api.as_token("local-dev-token").get("/v1/tokens").status == 200
    assert api.as_token("local-dev-token-x").get("/v1/tokens").status == 401


def test_a_token_is_kept_only_as_a_hash(rt: Runtime, api: Api) -> None:
    minted = api.post("/v1/tokens", {"scopes": ["read"]}).body
    secret = minted["token"].rsplit("_", 1)[1]
    stored = rt.db.get({"pk": "T", "sk": minted["id"]})
    assert stored is not None and "hash" in stored
    assert secret not in repr(stored), "the secret itself is never stored"


def test_a_checked_token_is_trusted_a_few_seconds_so_a_revocation_elsewhere_takes_that_long(
    rt: Runtime, api: Api, clock: ManualClock
) -> None:
    """Every token lives under one partition key that every space's requests read: a
    process reads a token once every CACHE_MS, not once a request."""
    minted = api.post("/v1/tokens", {"scopes": ["read"]}).body
    reader = api.as_token(minted["token"])
    assert reader.get(f"{SPACE}/jobs").status == 200
    rt.tokens.store.delete(minted["id"])  # revoked by another process: this one still trusts it
    clock.advance(CACHE_MS - 1)
    assert reader.get(f"{SPACE}/jobs").status == 200
    forged = minted["token"][: -len("0" * 64)] + "0" * 64
    assert api.as_token(forged).get(f"{SPACE}/jobs").status == 401, "only the same secret finds the cache"
    clock.advance(1)
    assert reader.get(f"{SPACE}/jobs").status == 401


def test_a_revocation_takes_effect_at_once_in_the_process_that_made_it(api: Api) -> None:
    minted = api.post("/v1/tokens", {"scopes": ["read"]}).body
    reader = api.as_token(minted["token"])
    assert reader.get(f"{SPACE}/jobs").status == 200
    assert api.delete(f"/v1/tokens/{minted['id']}").status == 204
    assert reader.get(f"{SPACE}/jobs").status == 401
