from __future__ import annotations

import pytest

from tests.support import Api


@pytest.fixture(autouse=True)
def _answers_match_the_openapi_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer these tests see is checked against the document (tests.support.check_answer)."""
    monkeypatch.setattr(Api, "check_answers", True)
