"""The README's quickstart, run exactly as written against a real `emit dev`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.e2e.conftest import DevServer
from tests.support import PATIENCE_S

README = Path(__file__).resolve().parents[2] / "README.md"


def quickstart() -> str:
    text = README.read_text()
    block = re.search(r"<!-- quickstart:begin -->\s*```sh\n(.*?)```\s*<!-- quickstart:end -->", text, re.S)
    assert block, "README.md has no quickstart block"
    return block.group(1)


def test_the_quickstart_takes_a_job_from_create_to_completed(dev_server: DevServer) -> None:
    script = quickstart()
    assert "http://127.0.0.1:8787" in script
    # The only change: the port this test's server listens on.
    script = script.replace("http://127.0.0.1:8787", dev_server.url)
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert lines[0].startswith("created ")
    assert '"attempt":1' in lines[1] and '"charge-invoice"' in lines[1]
    assert lines[2] == '{"outcomes":[{"status":"RUNNING"}]}'
    assert lines[3] == '{"outcomes":[{"status":"COMPLETED"}]}'
    assert '"status":"COMPLETED"' in lines[4] and '"result":{"chargeId":"ch_1"}' in lines[4]
