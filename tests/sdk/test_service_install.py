"""`emit dev` outside this repository: the SDK's and the service's wheels, built from this
checkout as pip builds them, installed in a fresh virtual environment with `emit-service[local]`,
give a working `emit dev` in an unrelated directory (the API, the dashboard's files, a job
made and read), and pytest there finds the plugin by its entry point alone.

The wheels are built by pip from a copy of the checkout (a build leaves `build/` and
`*.egg-info` in its source). Their dependencies (boto3, moto, pytest ...) are this
environment's own, seen by the new one through a folder of links on its path, so pip finds
them installed and needs no package index; the SDK and the service are left out of it,
so they come from the wheels or not at all.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import httpx
import setuptools
from packaging.version import Version

from tests.sdk.test_readme_python import example
from tests.support import PATIENCE_S

ROOT = Path(__file__).resolve().parents[2]
OURS = {"emit", "shared", "functions", "devserver", "infra", "bench", "dashboard"}
"""Top-level names of the SDK's and the service's packages: never linked from here."""
_NOT_LINKED = re.compile(
    r"^(emit_sdk|emit_service|__editable__|pip|setuptools|_distutils_hack|pkg_resources)"
)
_NOT_COPIED = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".cache",
    ".ci",
    "build",
    "cdk.out",
    "node_modules",
    "__pycache__",
    "*.egg-info",
    ".*_cache",
)


def test_the_wheels_give_a_working_emit_dev_and_plugin_outside_the_repository(tmp_path: Path) -> None:
    wheels = _build_wheels(tmp_path)
    python = _fresh_environment(tmp_path)
    away = tmp_path / "elsewhere"
    away.mkdir()
    # The service's `local` extra alone: the SDK comes with it (by name, from the wheels).
    installed = _inside(
        away, python, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels),
        "emit-service[local]",
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr

    # Every package of ours from the new environment's site-packages, not this checkout.
    where = _inside(
        away, python, "-c", "import emit, devserver, functions, shared; print(devserver.__file__)"
    )
    assert where.returncode == 0 and where.stdout.startswith(str(tmp_path / "venv")), where.stderr

    bin_dir = Path(python).parent
    dev = subprocess.Popen(
        [str(bin_dir / "emit"), "dev", "--port", "0"],
        cwd=away,
        env=_environment() | {"EMIT_DEV_TOKEN": "install-test", "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = _listening(dev)
        _serves_the_api_and_the_dashboard(url, "install-test")
    finally:
        dev.terminate()
        dev.wait(PATIENCE_S)

    # The plugin by its entry point alone (no -p): the README's test file, its emit dev the
    # new environment's.
    (away / "test_workers.py").write_text(example("testing"))
    tested = _inside(away, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_workers.py")
    assert tested.returncode == 0 and "4 passed" in tested.stdout, tested.stdout + tested.stderr


def _build_wheels(tmp_path: Path) -> Path:
    """`pip wheel` of the SDK and the service, from a copy of the checkout; offline when this
    environment's setuptools can build wheels itself (70.1 and later), else in pip's isolated
    build environment."""
    source, wheels = tmp_path / "source", tmp_path / "wheels"
    shutil.copytree(ROOT, source, ignore=_NOT_COPIED, symlinks=True)
    offline = Version(setuptools.__version__) >= Version("70.1")
    isolation = ["--no-build-isolation"] if offline else []
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(wheels),
         str(source / "sdk"), str(source)],
        capture_output=True, text=True, timeout=4 * PATIENCE_S, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    names = sorted(p.name for p in wheels.iterdir())
    assert [n.split("-")[0] for n in names] == ["emit_sdk", "emit_service"], names
    return wheels


def _fresh_environment(tmp_path: Path) -> str:
    """A new virtual environment whose path also holds links to this one's installed
    distributions, but for ours (and pip's and setuptools', which it has of its own)."""
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    links = tmp_path / "linked-site-packages"
    links.mkdir()
    here = Path(sysconfig.get_paths()["purelib"])
    for entry in here.iterdir():
        if entry.suffix == ".pth" or entry.name in OURS or entry.name == "__pycache__":
            continue
        if _NOT_LINKED.match(entry.name):
            continue
        (links / entry.name).symlink_to(entry)
    purelib = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "linked.pth").write_text(f"{links}\n")
    return str(env / "bin" / "python")


def _listening(dev: subprocess.Popen[str]) -> str:
    assert dev.stdout is not None
    seen = []
    for line in dev.stdout:
        seen.append(line)
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            return found.group(1)
    raise AssertionError("emit dev did not start:\n" + "".join(seen))


def _serves_the_api_and_the_dashboard(url: str, token: str) -> None:
    with httpx.Client(base_url=url, timeout=PATIENCE_S) as http:
        assert http.get("/v1/openapi.json").json()["openapi"].startswith("3.1")
        page = http.get("/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        script = http.get("/dashboard/app.js")
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
        auth = {"authorization": f"Bearer {token}"}
        created = http.post("/v1/spaces/ci/jobs", json={"name": "hello", "payload": {"n": 1}}, headers=auth)
        assert created.status_code == 200, created.text
        job = http.get(f"/v1/spaces/ci/jobs/{created.json()['id']}", headers=auth).json()
        assert job["status"] == "PENDING" and job["payload"] == {"n": 1}


def _environment() -> dict[str, str]:
    """This one's, without what would lead back to this checkout or this environment."""
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTEST_ADDOPTS")
    return {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("EMIT_")}


def _inside(where: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=where, env=_environment(), capture_output=True, text=True,
        timeout=4 * PATIENCE_S, check=False,
    )  # fmt: skip
