"""What the functions are deployed with: the pinned dependencies (complete, built for Lambda's
arm64 Python, free of machine-specific files), the shared layer, and one module per function."""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import Distribution, distributions, packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from infra import bundling
from infra.constructs.functions import Functions
from shared import dashboard
from tests.infra.cfn import Synthesized, module_of, resources
from tests.infra.conftest import STACK

PYTHON = Functions.RUNTIME.name.removeprefix("python")
LAMBDA = {  # the marker environment of a Lambda function on Functions.RUNTIME and ARCHITECTURE
    "python_version": PYTHON,
    "python_full_version": f"{PYTHON}.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "aarch64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in bundling.LOCK.read_text().splitlines():
        pin = line.strip()
        if pin and not pin.startswith("#"):
            name, version = pin.split("==")
            assert canonicalize_name(name) not in pins, f"{name} is pinned twice"
            pins[canonicalize_name(name)] = version
    return pins


@pytest.fixture(scope="module")
def layer() -> Path:
    """The dependencies layer's `python/` directory (from the build cache)."""
    return bundling.dependencies_layer(PYTHON, Functions.PIP_PLATFORMS) / "python"


def _runtime_imports() -> Iterator[str]:
    """Top-level modules imported by shared/ and functions/, except under TYPE_CHECKING."""
    for source in [
        *Path(bundling.ROOT, "shared").rglob("*.py"),
        *Path(bundling.ROOT, "functions").glob("*.py"),
    ]:
        yield from _imports(ast.parse(source.read_text()))


def _imports(tree: ast.AST) -> Iterator[str]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (name for child in node.orelse for name in _imports(ast.Module([child], [])))
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]
        else:
            yield from _imports(node)


def _needed() -> set[str]:
    """The distributions the functions import, with the extras the project asks for, and
    everything those require on Lambda: what the lock must pin, no more, no less."""
    owners = packages_distributions()
    local = {"shared", "functions", *sys.stdlib_module_names}
    roots = {canonicalize_name(owners[name][0]) for name in set(_runtime_imports()) - local}
    declared = tomllib.loads((bundling.ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    extras = {canonicalize_name(r.name): r.extras for r in map(Requirement, declared)}
    wanted = [(root, extras.get(root, set())) for root in roots]
    needed: set[str] = set()
    while wanted:
        name, with_extras = wanted.pop()
        if name in needed:
            continue
        needed.add(name)
        for requirement in map(Requirement, _installed(name).requires or []):
            if any(
                requirement.marker is None or requirement.marker.evaluate(LAMBDA | {"extra": extra})
                for extra in ["", *with_extras]
            ):
                wanted.append((canonicalize_name(requirement.name), set(requirement.extras)))
    return needed


def _installed(name: str) -> Distribution:
    found = [d for d in distributions() if canonicalize_name(d.metadata["Name"]) == name]
    assert found, f"{name} is not installed in the development environment"
    return found[0]


def test_the_lock_pins_exactly_what_the_functions_need() -> None:
    assert set(_pins()) == _needed()


def test_the_layer_holds_every_pinned_version(layer: Path) -> None:
    built = {canonicalize_name(d.metadata["Name"]): d.version for d in distributions(path=[str(layer)])}
    assert built == _pins()


def test_the_layer_is_built_for_lambda_on_arm64(layer: Path) -> None:
    (compiled,) = layer.glob("pydantic_core/_pydantic_core*.so")
    assert compiled.name == f"_pydantic_core.cpython-{PYTHON.replace('.', '')}-aarch64-linux-gnu.so"


def test_the_layer_holds_nothing_about_this_machine(layer: Path) -> None:
    assert not (layer / "bin").exists()
    assert not list(layer.glob("*.dist-info/RECORD"))
    assert not list(layer.rglob("__pycache__"))


def test_each_function_ships_only_its_module(synthesized: Synthesized) -> None:
    """The dashboard's functions ship its files beside their module, and nothing else."""
    for function in resources(synthesized.templates[STACK], "AWS::Lambda::Function").values():
        asset = synthesized.outdir / f"asset.{function['Properties']['Code']['S3Key'].removesuffix('.zip')}"
        module = module_of(function)
        if module in bundling.DASHBOARD_FUNCTIONS:
            assert sorted(p.name for p in asset.iterdir()) == ["dashboard", f"{module}.py"]
            assert sorted(p.name for p in (asset / "dashboard").iterdir()) == sorted(dashboard.FILES)
        else:
            assert [p.name for p in asset.iterdir()] == [f"{module}.py"]


def test_the_shared_layer_is_the_shared_package(synthesized: Synthesized) -> None:
    layers = resources(synthesized.templates[STACK], "AWS::Lambda::LayerVersion").values()
    assets = [
        synthesized.outdir / f"asset.{r['Properties']['Content']['S3Key'].removesuffix('.zip')}"
        for r in layers
    ]
    (shared,) = [a for a in assets if (a / "python" / "shared").is_dir()]
    shipped = sorted(p.relative_to(shared / "python") for p in shared.rglob("*") if p.is_file())
    source = sorted(p.relative_to(bundling.ROOT) for p in (bundling.ROOT / "shared").rglob("*.py"))
    assert shipped == source
