"""Answers as they are sent: one serialization, and its size where the limit applies.

An answer is compact JSON in UTF-8 with characters as they are (no `\\u` escapes: an
emoji is 4 bytes, not 12). Lone surrogates, which UTF-8 cannot hold, never get this far:
`shared.http.body` refuses them at input.

On AWS the answer travels as a JSON string inside the function's response, which is
what Lambda's 6 MB limit counts; the Python 3.12+ runtimes write that response without
`\\u` escapes too, so the only growth is a backslash before each `"` and `\\` of the
answer. `cost` counts those, so a budget kept in `cost` holds both locally (the HTTP
body is smaller) and on AWS.
"""

from __future__ import annotations

import json
from typing import Any


def text(value: Any) -> str:
    """The answer's JSON text, exactly as it is sent."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def cost(answer: str) -> int:
    """Bytes `answer` (from `text`) takes in the function's response: its UTF-8, plus the
    escape each `"` and `\\` gets there."""
    return len(answer.encode()) + answer.count('"') + answer.count("\\")
