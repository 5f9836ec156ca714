from tests.support import Api


def test_create_claim_complete(api: Api) -> None:
    created = api.post(
        "/v1/spaces/billing/jobs", {"name": "charge-invoice", "payload": {"invoiceId": "inv_1042"}}
    )
    assert created.status == 200, created
    job_id = created.body["id"]
    claimed = api.post("/v1/spaces/billing/jobs:claim", {"count": 1})
    assert claimed.status == 200, claimed
    [held] = claimed.body["jobs"]
    assert held["id"] == job_id and held["attempt"] == 1 and held["payload"] == {"invoiceId": "inv_1042"}
    done = api.post(
        "/v1/spaces/billing/jobs:report", {"id": job_id, "attempt": 1, "complete": {"result": {"ok": True}}}
    )
    assert done.body == {"outcomes": [{"status": "COMPLETED"}]}
    got = api.get(f"/v1/spaces/billing/jobs/{job_id}")
    assert got.body["status"] == "COMPLETED" and got.body["result"] == {"ok": True}
