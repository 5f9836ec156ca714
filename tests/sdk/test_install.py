"""The SDK installs alone: a fresh virtual environment gets it and what it declares
(httpx and its dependencies), from local wheels, and `import emit` works there without
boto3, any of the service's own packages, or its extras (OpenTelemetry's among them), nor
pydantic (tasks take dataclasses there)."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

from tests.sdk.wheels import dependency_wheels, sdk_wheel
from tests.support import PATIENCE_S

CHECK = """
import importlib.util, emit
assert emit.Emit and emit.worker and emit.verify_signature
from emit import cli, worker, signature
for absent in ("boto3", "botocore", "moto", "aws_cdk", "pydantic", "shared", "devserver", "opentelemetry"):
    assert importlib.util.find_spec(absent) is None, absent
# Without the `otel` extra: no trace context is sent, and handlers run in no span, unharmed.
from emit import tracing, HeldJob
assert not tracing.available() and tracing.headers() is None
with tracing.handler_span(HeldJob(id="j", name="n", attempt=1, payload=None, space="s", traceparent="x")):
    pass
# Tasks without pydantic: a dataclass payload, a handler called as the worker would call it.
from dataclasses import dataclass
from emit.testing import call, held_job
@dataclass
class Size:
    width: int
resize = emit.Emit("http://127.0.0.1:9", "unused", "s").task("resize", payload=Size)
double = resize.worker()(lambda size: size.width * 2)
assert call(double, held_job({"width": 2})).result == 4 and double(Size(3)) == 6
print("ok", emit.__version__)
"""


def test_the_sdk_installs_alone_in_a_fresh_virtual_environment(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _, requires = sdk_wheel(wheels)
    assert [r.split(">")[0].split("=")[0] for r in requires] == ["httpx"]  # its only requirement
    dependency_wheels(requires, wheels)

    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = str(env / "bin" / "python")
    install = inside(
        tmp_path, python, "-m", "pip", "install", "-q", "--no-index", "-f", str(wheels), "emit-sdk"
    )
    assert install.returncode == 0, install.stderr

    checked = inside(tmp_path, python, "-c", CHECK)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("ok")

    emit = str(env / "bin" / "emit")
    helped = inside(tmp_path, emit, "jobs", "--help")
    assert helped.returncode == 0 and "follow" in helped.stdout
    dev = inside(tmp_path, emit, "dev")
    assert dev.returncode == 2 and "make dev" in dev.stderr


def inside(where: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """Run away from this repository, so its packages can't be imported by accident."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return subprocess.run(
        command, cwd=where, env=env, capture_output=True, text=True, timeout=2 * PATIENCE_S, check=False
    )
