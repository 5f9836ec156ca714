"""Wheels for a fresh virtual environment, made from what this one already has, so the
SDK's install test needs no package index.

The SDK's own wheel is laid out from `sdk/pyproject.toml` (its name, version, dependencies
and console script) and the files of its package; each dependency's wheel is rebuilt from
the files its installed distribution lists. Only what the SDK declares goes in, so the
install fails if the SDK needs anything it does not declare.
"""

from __future__ import annotations

import base64
import hashlib
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

SDK = Path(__file__).resolve().parents[2] / "sdk"
_SKIPPED = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")


def sdk_wheel(out: Path) -> tuple[Path, list[str]]:
    """The SDK's wheel, and the requirements it declares."""
    project = tomllib.loads((SDK / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    files = {
        path.relative_to(SDK).as_posix(): path.read_bytes()
        for path in sorted((SDK / "emit").rglob("*"))
        if path.is_file() and (path.suffix == ".py" or path.name == "py.typed")
    }
    requires = list(project.get("dependencies", []))
    files[f"{info}/METADATA"] = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        + [f"Requires-Python: {project['requires-python']}"]
        + [f"Requires-Dist: {r}" for r in requires]
    ).encode()
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    scripts = "".join(f"{k} = {v}\n" for k, v in project.get("scripts", {}).items())
    files[f"{info}/entry_points.txt"] = f"[console_scripts]\n{scripts}".encode()
    return _write(out / f"{stem}-py3-none-any.whl", info, files), requires


def dependency_wheels(requirements: list[str], out: Path) -> list[Path]:
    """Wheels of every installed distribution `requirements` need, transitively."""
    wanted = [Requirement(r) for r in requirements]
    done: set[str] = set()
    wheels = []
    while wanted:
        requirement = wanted.pop()
        key = canonicalize_name(requirement.name)
        if key in done or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        done.add(key)
        dist = metadata.distribution(requirement.name)
        wheels.append(_rebuild(dist, out))
        wanted.extend(Requirement(r) for r in dist.requires or [])
    return wheels


def _rebuild(dist: metadata.Distribution, out: Path) -> Path:
    listed = [
        f for f in dist.files or [] if not f.as_posix().startswith("..") and "__pycache__" not in f.parts
    ]
    info = next(f.parts[0] for f in listed if f.parts[0].endswith(".dist-info"))
    files = {
        f.as_posix(): Path(str(dist.locate_file(f))).read_bytes()
        for f in listed
        if not (f.parts[0] == info and f.name in _SKIPPED)
    }
    stem = f"{canonicalize_name(dist.metadata['Name']).replace('-', '_')}-{dist.version}"
    return _write(out / f"{stem}-py3-none-any.whl", info, files)


def _write(path: Path, info: str, files: dict[str, bytes]) -> Path:
    record = []
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        wheel.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path
