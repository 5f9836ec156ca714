"""The `emit` command.

`emit dev` runs the service locally; it needs the service's own project environment
(`make dev` sets it up), since the SDK alone carries no server.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["dev"]:
        return _dev(argv[1:])
    parser = argparse.ArgumentParser(prog="emit", description="The emit job queue.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("dev", help="run the whole service locally (emit dev --help)")
    parser.parse_args(argv)
    return 2


def _dev(argv: list[str]) -> int:
    try:
        from devserver.cli import main as dev_main
    except ImportError:
        print("emit dev runs in the service's project environment: run `make dev` there.", file=sys.stderr)
        return 2
    return dev_main(argv)


if __name__ == "__main__":
    sys.exit(main())
