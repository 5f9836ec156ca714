"""The moto version the embedded fast path was written (and proven) against.

The fast path reaches into moto's internals (its tables, items, request handler and stream
shard); another version may have moved them. With any other version `emit dev` keeps using
plain moto through boto3: slower, never wrong.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

MOTO_VERSION = "5.2.5"


def installed_moto() -> str | None:
    try:
        return version("moto")
    except PackageNotFoundError:
        return None


def supported() -> bool:
    """Whether the installed moto is the one the fast path was written for."""
    return installed_moto() == MOTO_VERSION
