"""What the OpenAPI fuzz run (tests/fuzz) found: input the document calls invalid that the
service took. Each is now refused with a 400 naming the field."""

from __future__ import annotations

import pytest

from tests.support import Api

SPACE = "/v1/spaces/fuzzed"


@pytest.mark.parametrize("name", ["has space", "x" * 129, "", "naïve", "line\n"])
def test_a_list_by_a_name_no_job_can_have_is_refused(api: Api, name: str) -> None:
    answer = api.get(f"{SPACE}/jobs", query={"name": name})
    assert answer.status == 400, answer
    assert answer.body == {"code": "InvalidArgument", "message": "name: must be 1-128 of A-Z a-z 0-9 . _ : -"}


def test_a_list_by_a_valid_name_still_works(api: Api) -> None:
    api.post(f"{SPACE}/jobs", [{"name": "a.b:c_d-1"}, {"name": "other"}])
    answer = api.get(f"{SPACE}/jobs", query={"name": "a.b:c_d-1"})
    assert answer.status == 200, answer
    assert [job["name"] for job in answer.body["jobs"]] == ["a.b:c_d-1"]


def test_a_report_batch_with_an_unknown_field_beside_reports_is_refused(api: Api) -> None:
    job_id = api.post(f"{SPACE}/jobs", {"name": "n"}).body["id"]
    api.post(f"{SPACE}/jobs:claim", {"count": 1})
    answer = api.post(
        f"{SPACE}/jobs:report", {"reports": [{"id": job_id, "attempt": 1, "complete": {}}], "force": True}
    )
    assert answer.status == 400, answer
    assert answer.body == {"code": "InvalidArgument", "message": "force: is not a known field"}
    assert api.get(f"{SPACE}/jobs/{job_id}").body["status"] == "RUNNING"  # nothing applied
