"""The store-behind-port contract (pyproject's import-linter) names its modules one by one
(import-linter cannot say "the store but its port"): these keep its lists whole, so a new
module of shared is checked as a source and a new module of the store is forbidden."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _contract() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["id"] == "store-behind-port")


def _children(package: Path) -> set[str]:
    modules = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    return modules | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}


def test_every_module_of_shared_but_the_store_and_the_runtime_is_a_source() -> None:
    wanted = {f"shared.{m}" for m in _children(ROOT / "shared") - {"store", "runtime"}} | {"functions"}
    assert set(_contract()["source_modules"]) == wanted  # type: ignore[arg-type]


def test_every_module_of_the_store_but_its_port_is_forbidden() -> None:
    wanted = {f"shared.store.{m}" for m in _children(ROOT / "shared" / "store") - {"port"}}
    assert set(_contract()["forbidden_modules"]) == wanted  # type: ignore[arg-type]
