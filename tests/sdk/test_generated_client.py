"""A client generated from the OpenAPI document by openapi-python-client, as the README's
recipe makes it, against `emit dev`: generated without a warning (a schema it cannot read
is dropped with every schema and answer that refers to it), it reads a space's settings,
job defaults included, and creates jobs that take those defaults and reads them back.

The generator is the `dev` extra's (`make test` installs it) and runs locally, in about a
second, once for the module; missing, these tests fail. The README's example of the
client is run here too, as written."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.dev import DevServer
from tests.sdk.test_readme_python import example
from tests.support import PATIENCE_S

PACKAGE = "emit_client"
"""The generator's name for the package of a document titled `emit`."""


@dataclass
class Generated:
    models: ModuleType
    url: str
    token: str
    path: str
    """Where the package is: what `pip install ./emit-client` would put on the path."""

    def call(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        """`emit_client.api.default.<operation>.sync(...)` with a client of the dev token: the
        answer's model (an `Error` for an error status)."""
        module = importlib.import_module(f"{PACKAGE}.api.default.{operation}")
        client = importlib.import_module(PACKAGE).AuthenticatedClient(
            base_url=self.url,
            token=self.token,
            raise_on_unexpected_status=True,
            timeout=httpx.Timeout(PATIENCE_S),
        )
        with client:
            return module.sync(*args, client=client, **kwargs)


@pytest.fixture(scope="module")
def generated(dev: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    where = tmp_path_factory.mktemp("generated-client")
    document = where / "emit-openapi.json"
    document.write_bytes(
        httpx.get(f"{dev.url}/v1/openapi.json", timeout=PATIENCE_S).raise_for_status().content
    )
    config = where / "config.json"
    config.write_text('{"post_hooks": []}')  # no ruff over the generated code: not needed to import it
    out = where / "emit-client"
    command = ["generate", "--path", str(document), "--output-path", str(out), "--config", str(config)]
    run = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", *command, "--fail-on-warning"],
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )
    assert run.returncode == 0, f"openapi-python-client failed:\n{run.stdout}\n{run.stderr}"
    assert "Warning" not in run.stdout + run.stderr, run.stdout + run.stderr
    sys.path.insert(0, str(out))
    try:
        yield Generated(importlib.import_module(f"{PACKAGE}.models"), dev.url, dev.token, str(out))
    finally:
        sys.path.remove(str(out))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def settings(generated: Generated, space: str, patch: dict[str, Any]) -> Any:
    body = generated.models.SettingsPatch.from_dict(patch)
    assert isinstance(generated.call("update_space", space, body=body), generated.models.Space)
    return generated.call("get_space", space)


def test_it_reads_a_spaces_settings(generated: Generated, dev: DevServer, space: str) -> None:
    m = generated.models
    read = settings(
        generated,
        space,
        {"maxInFlight": 50, "jobDefaults": {"send-email": {"priority": 5, "maxAttempts": 7}}},
    )
    assert isinstance(read, m.Space), read
    assert (read.space, read.max_in_flight, read.in_flight) == (space, 50, 0)
    assert read.backoff.kind.value == "exponential"
    assert read.policy.paused is False
    defaults = read.job_defaults["send-email"]
    assert isinstance(defaults, m.JobDefaults)
    assert (defaults.priority, defaults.max_attempts) == (5, 7)
    assert defaults.to_dict() == {"priority": 5, "maxAttempts": 7}, "only the fields set"
    served = httpx.get(
        f"{dev.url}/v1/spaces/{space}", headers={"Authorization": f"Bearer {dev.token}"}, timeout=PATIENCE_S
    ).json()
    assert read.to_dict() == served, "every field of the answer read"


def test_it_creates_jobs_that_take_the_names_defaults_and_reads_them_back(
    generated: Generated, space: str
) -> None:
    m = generated.models
    settings(generated, space, {"jobDefaults": {"send-email": {"priority": 5, "maxAttempts": 7}}})
    made = generated.call(
        "create_jobs", space, body=m.NewJob(name="send-email", payload={"to": "ada@example.com"})
    )
    assert isinstance(made, m.Created), made
    assert made.outcome.value == "NEW"
    job = generated.call("get_job", space, made.id)
    assert isinstance(job, m.Job), job
    assert (job.id, job.name, job.status.value) == (made.id, "send-email", "PENDING")
    assert job.payload == {"to": "ada@example.com"}
    assert (job.priority, job.max_attempts) == (5, 7), "a priority left out is the name's default"

    batch = generated.call(
        "create_jobs",
        space,
        body=[m.NewJob(name="send-email", priority=-1, max_attempts=2), m.NewJob(name="other")],
    )
    assert isinstance(batch, m.CreatedBatch), batch
    own, other = (generated.call("get_job", space, c.id) for c in batch.jobs)
    assert (own.priority, own.max_attempts) == (-1, 2), "what the creator sends wins"
    assert (other.priority, other.max_attempts) == (0, 4), "a name without defaults: the built-in ones"


def test_an_error_is_read_as_the_documents_error(generated: Generated, space: str) -> None:
    missing = generated.call("get_job", space, "01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert isinstance(missing, generated.models.Error), missing
    assert missing.code == "NotFound"


def test_the_readmes_example_runs_as_written(generated: Generated) -> None:
    run = subprocess.run(
        [sys.executable, "-c", example("generated-client")],
        env=os.environ
        | {"EMIT_URL": generated.url, "EMIT_TOKEN": generated.token, "PYTHONPATH": generated.path},
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == ["10", "PENDING 5"], "what its comments say"
