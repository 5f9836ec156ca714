"""The Lambda layers' contents, built on this machine: no Docker, and no network once cached.

Two layers, because they change at different speeds:

- dependencies: the pinned third-party packages in `requirements-lambda.txt`, installed
  by pip as Linux arm64 wheels for the functions' Python (`--platform ... --only-binary`),
  so a compiled package such as pydantic-core is the one Lambda can load. The result is
  cached under `build/lambda-deps/<key>/`, keyed by a hash of the pins, the Python version
  and the platform: PyPI is needed once per change of pins, and every later synth (tests
  included) reuses the directory offline.
- shared: the `shared/` package, copied (source only) under `build/lambda-shared/<hash>/`.

Both directories are laid out as Lambda expects (`python/...` becomes `/opt/python`) and
their contents do not depend on the machine or the time, so the assets' hashes are stable.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from shared.dashboard import FILES

ROOT = Path(__file__).resolve().parent.parent
"""The repository."""
LOCK = Path(__file__).resolve().parent / "requirements-lambda.txt"
BUILD = ROOT / "build"
RECIPE = "1"
"""Part of the cache key: bump it when the steps below change what a layer contains."""


def dependencies_layer(python_version: str, platforms: Sequence[str], lock: Path = LOCK) -> Path:
    """A directory holding `python/<packages>` for the given Lambda Python and platforms."""
    key = _digest(
        [RECIPE.encode(), python_version.encode(), " ".join(platforms).encode(), lock.read_bytes()]
    )[:16]
    target = BUILD / "lambda-deps" / key
    if (target / "python").is_dir():
        return target
    print(
        f"Installing the Lambda dependencies for python{python_version} into {target} (once)", file=sys.stderr
    )
    with _staging(target) as staging:
        command = [
            sys.executable, "-m", "pip", "install",
            "--quiet", "--disable-pip-version-check", "--no-input",
            "--no-compile",  # .pyc files embed timestamps; Lambda compiles in memory anyway
            "--no-deps",  # the lock pins every package, dependencies included
            "--only-binary=:all:", "--implementation", "cp", "--python-version", python_version,
            *[arg for platform in platforms for arg in ("--platform", platform)],
            "--target", str(staging / "python"),
            "--requirement", str(lock),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                "pip could not install the Lambda dependencies (it needs PyPI the first time):\n"
                + done.stderr
            )
        _make_portable(staging / "python")
    return target


def shared_layer() -> Path:
    """A directory holding `python/shared/`: the code every function imports."""
    sources = sorted(p for p in (ROOT / "shared").rglob("*.py") if "__pycache__" not in p.parts)
    key = _digest([str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() for p in sources])[:16]
    target = BUILD / "lambda-shared" / key
    if not (target / "python").is_dir():
        with _staging(target) as staging:
            for source in sources:
                copy = staging / "python" / source.relative_to(ROOT)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, copy)
        _prune(target)
    return target


DASHBOARD_FUNCTIONS = frozenset({"get_dashboard", "get_dashboard_file"})
"""The functions that serve the dashboard's files, which are packaged with them."""


def function_code(module: str) -> Path:
    """The directory a function's code asset is made of: for most, `functions/` (of which
    the asset keeps `<module>.py` alone); for the dashboard's, `build/lambda-dashboard/<hash>/`
    holding `<module>.py` and `dashboard/` beside it (`shared.dashboard.directory`)."""
    if module not in DASHBOARD_FUNCTIONS:
        return ROOT / "functions"
    sources = [ROOT / "functions" / f"{module}.py", *(ROOT / "dashboard" / name for name in sorted(FILES))]
    key = _digest([p.name.encode() + b"\0" + p.read_bytes() for p in sources])[:16]
    target = BUILD / "lambda-dashboard" / module / key
    if not target.is_dir():
        with _staging(target) as staging:
            shutil.copyfile(sources[0], staging / sources[0].name)
            (staging / "dashboard").mkdir()
            for source in sources[1:]:
                shutil.copyfile(source, staging / "dashboard" / source.name)
        _prune(target)
    return target


def _make_portable(site: Path) -> None:
    """Drop what pip wrote about this machine: console scripts carry its interpreter's
    path, and each RECORD lists their hashes. Lambda uses neither."""
    shutil.rmtree(site / "bin", ignore_errors=True)
    for record in site.glob("*.dist-info/RECORD"):
        record.unlink()


class _staging:
    """Build into a temporary sibling of `target`, then move it into place in one rename,
    so a half-built layer is never used and two concurrent builds cannot mix."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __enter__(self) -> Path:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.staging = Path(tempfile.mkdtemp(prefix=".partial-", dir=self.target.parent))
        return self.staging

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is None:
            try:
                os.rename(self.staging, self.target)
            except OSError:
                if not self.target.is_dir():  # not a concurrent build's success: a real failure
                    raise
        shutil.rmtree(self.staging, ignore_errors=True)


def _prune(keep: Path) -> None:
    """Remove earlier copies of `shared/`; they are small but would pile up with every edit."""
    for sibling in keep.parent.iterdir():
        if sibling != keep and not sibling.name.startswith(".partial-"):
            shutil.rmtree(sibling, ignore_errors=True)


def _digest(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()
