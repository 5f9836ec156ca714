"""`emit dev` runs the fast embedded DynamoDB only on the moto version it was written for."""

from __future__ import annotations

import pytest
from moto import mock_aws

from devserver import wiring
from devserver.embedded import compat
from devserver.embedded.client import DirectDynamoDB


def test_the_fast_path_runs_on_the_moto_it_was_written_for() -> None:
    assert compat.installed_moto() == compat.MOTO_VERSION, (
        "pyproject.toml pins the moto the fast path was written for"
    )
    with mock_aws():
        runtime = wiring.build_runtime(fast=True)
        assert isinstance(runtime.dynamodb._client, DirectDynamoDB)
        assert not isinstance(wiring.build_runtime().dynamodb._client, DirectDynamoDB), "tests run plain moto"


def test_another_moto_runs_plain_moto_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(compat, "installed_moto", lambda: "9.9.9")
    with mock_aws():
        runtime = wiring.build_runtime(fast=True)
        assert not isinstance(runtime.dynamodb._client, DirectDynamoDB)
    assert "moto 9.9.9 is not 5.2.5" in capsys.readouterr().err
