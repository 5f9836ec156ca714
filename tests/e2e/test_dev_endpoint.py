"""`emit dev --dynamodb-endpoint`: jobs outlive the process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import free_port, start_dev
from tests.support import PATIENCE_S, eventually


@pytest.fixture
def dynamodb_endpoint() -> Iterator[str]:
    """A DynamoDB-compatible endpoint in its own process (moto's standalone server)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            httpx.get(url, timeout=PATIENCE_S)
        except httpx.TransportError:
            return False
        return True

    eventually(answers)
    yield url
    server.terminate()
    server.wait(timeout=PATIENCE_S)


def test_jobs_outlive_the_dev_server(dynamodb_endpoint: str) -> None:
    first = start_dev("--dynamodb-endpoint", dynamodb_endpoint)
    headers = {"Authorization": f"Bearer {first.token}"}
    try:
        created = httpx.post(
            f"{first.url}/v1/spaces/keep/jobs", json={"name": "n", "payload": 7}, headers=headers
        )
        job_id = created.json()["id"]
    finally:
        first.stop()
    second = start_dev("--dynamodb-endpoint", dynamodb_endpoint)
    try:
        job = httpx.get(f"{second.url}/v1/spaces/keep/jobs/{job_id}", headers=headers)
        assert job.status_code == 200 and job.json()["payload"] == 7
    finally:
        second.stop()


def test_without_a_dev_token_emit_dev_mints_one_and_prints_it() -> None:
    server = start_dev(token="")
    try:
        printed = [line for line in server.output if "admin token" in line]
        assert printed, "no admin token printed"
        token = printed[0].rsplit(" ", 1)[1].strip()
        assert token.startswith("emit_")
        answer = httpx.get(f"{server.url}/v1/tokens", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, "".join(server.output)
    finally:
        server.stop()
