"""The fuzz run's figures: counted by the test, printed in the run's summary."""

from __future__ import annotations

from collections import Counter

import pytest

RUN: Counter[str] = Counter()
"""Requests per operation, and the monotonic ns of the first and the last."""


@pytest.fixture(scope="session")
def fuzz_run() -> Counter[str]:
    return RUN


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line for the closing note and the CI log: operations, requests, seconds from the
    first request to the last."""
    operations = {label: n for label, n in RUN.items() if label not in ("started", "ended")}
    if operations:
        seconds = (RUN["ended"] - RUN["started"]) / 1e9
        terminalreporter.write_line(
            f"openapi fuzz: {len(operations)} operations, {sum(operations.values())} requests, "
            f"{seconds:.1f} s"
        )
