"""The benches' job payloads."""

from __future__ import annotations

import json
import random
from typing import Any


def order_payload(rng: random.Random, size: int = 1_000) -> dict[str, Any]:
    """A realistic 1 KB job payload: an order with a customer and line items."""
    items = [
        {
            "sku": f"SKU-{rng.randint(10_000, 99_999)}",
            "name": rng.choice(["Brass gear", "Punch card", "Steam valve", "Copper wire", "Walnut case"]),
            "qty": rng.randint(1, 9),
            "unitCents": rng.randint(100, 9_999),
        }
        for _ in range(8)
    ]
    payload: dict[str, Any] = {
        "orderId": f"ord_{rng.randint(1_000_000, 9_999_999)}",
        "customer": {
            "id": f"cus_{rng.randint(10_000, 99_999)}",
            "name": rng.choice(["Ada Lovelace", "Charles Babbage", "Mary Somerville", "Grace Hopper"]),
            "email": f"user{rng.randint(1, 99_999)}@example.com",
            "address": {"line1": f"{rng.randint(1, 200)} Analytical Row", "city": "London", "country": "GB"},
        },
        "currency": "GBP",
        "items": items,
        "note": "",
    }
    payload["note"] = "x" * max(0, size - len(json.dumps(payload, separators=(",", ":"))))
    return payload
