"""`shared.config`: one model of every runtime setting, read and written one way."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest
from pydantic import ValidationError

from devserver import cli
from infra import constants
from shared import config as config_module
from shared.config import Config, markdown_table, readme_with_table

ROOT = Path(__file__).resolve().parents[2]
NAMES = {field: Config.env(field).name for field in Config.model_fields}


def test_every_field_has_its_variable_and_its_reason() -> None:
    assert len(set(NAMES.values())) == len(NAMES), "one variable a field"
    for field, info in Config.model_fields.items():
        env = Config.env(field)
        assert env.name.startswith("EMIT_"), field
        assert info.description, f"{field} says why it is what it is"
        if env.local is not config_module._SAME:
            assert env.local_why, f"{field}'s local value says why"


def test_the_environment_reads_back_as_the_same_settings() -> None:
    deployed = Config(table="t", bucket="b", callback_queue_url="https://sqs/q")
    assert Config.from_env(deployed.environment()) == deployed
    local = Config.local().model_copy(update={"dev_token": "x", "dynamodb_endpoint": "http://127.0.0.1:8000"})
    assert Config.from_env(local.environment()) == local
    assert Config.from_env(Config.local().environment()) == Config.local()


def test_unset_and_empty_variables_leave_the_default() -> None:
    assert Config.from_env({"EMIT_TABLE": "t", "EMIT_BUCKET": "", "EMIT_MAX_WAIT_MS": ""}) == Config(
        table="t"
    )
    with pytest.raises(ValidationError):  # a function without its table fails at once
        Config.from_env({})


def test_a_setting_past_the_contract_is_refused() -> None:
    with pytest.raises(ValidationError):
        Config.from_env({"EMIT_TABLE": "t", "EMIT_MAX_WAIT_MS": "60001"})
    with pytest.raises(ValidationError):
        Config(table="t", policy_cache_ms=1_001)
    with pytest.raises(ValidationError):
        Config(table="t", poll_ms=0)


def test_the_model_is_frozen() -> None:
    with pytest.raises(ValidationError):
        Config.local().claim_wait_ms = 0  # type: ignore[misc]


def test_emit_dev_starts_local_then_takes_the_environment_then_its_flags() -> None:
    args = argparse.Namespace(dynamodb_endpoint=None)
    assert cli.configuration(args, {}) == Config.local()
    env = {"EMIT_MAX_WAIT_MS": "0", "EMIT_DEV_TOKEN": "tok", "EMIT_DYNAMODB_ENDPOINT": "http://a"}
    got = cli.configuration(args, env)
    assert (got.claim_wait_ms, got.dev_token, got.dynamodb_endpoint) == (0, "tok", "http://a")
    assert got.book_shards == Config.local().book_shards
    flagged = cli.configuration(argparse.Namespace(dynamodb_endpoint="http://b"), env)
    assert flagged.dynamodb_endpoint == "http://b"


def test_the_readme_lists_every_setting_as_the_model_says() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme == readme_with_table(readme), "run `python -m shared.config` to rewrite the README's table"
    for name in NAMES.values():
        assert f"`{name}`" in markdown_table()


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    }


def test_only_the_model_reads_or_writes_the_variables() -> None:
    """No module of the service names a setting's variable in code (reading it with a
    default of its own, or writing it): they all go through `Config`."""
    offenders = []
    for package in ("shared", "functions", "devserver", "infra", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "shared" / "config.py":
                continue
            named = _string_constants(path) & set(NAMES.values())
            offenders += [f"{path.relative_to(ROOT)}: {name}" for name in sorted(named)]
    assert not offenders


def test_a_recount_settles_only_after_the_streams_records_are_past_their_age() -> None:
    """`shared.recount` is exact only if every record of a move its survey saw has been
    counted or dropped by the time it settles."""
    assert Config.default("recount_settle_ms") > constants.STREAM_MAX_RECORD_AGE_S * 1000
