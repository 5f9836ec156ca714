"""`emit dev [--host 127.0.0.1] [--port 8787] [--dynamodb-endpoint URL]`."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import secrets
import sys
import warnings
from collections.abc import Mapping
from contextlib import ExitStack

from devserver.clock import PATH as CLOCK_PATH
from devserver.clock import TestClock
from devserver.wiring import build_runtime, local_environment
from shared.config import Config
from shared.routes import ROUTES
from shared.runtime import install
from shared.schema import NewToken
from shared.wake import ROUTES as WAKE_ROUTES
from shared.wake import ThreadSender


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8787, help="port to listen on (default 8787)")
    parser.add_argument(
        "--dynamodb-endpoint",
        default=None,
        help="keep tables on this DynamoDB-compatible endpoint, not in memory, so jobs outlive the process "
        "(EMIT_DYNAMODB_ENDPOINT)",
    )
    parser.add_argument(
        "--wake-port",
        type=int,
        default=None,
        help="port of the wake WebSocket (default: the next port; a free one with --port 0)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument(
        "--test-clock",
        action="store_true",
        help="a clock tests move ahead through POST /_dev/clock {advanceMs} with the admin token "
        "(devserver/clock.py)",
    )


def configuration(args: argparse.Namespace, env: Mapping[str, str]) -> Config:
    """`emit dev`'s settings: the local ones (`Config.local()`), then any `EMIT_*` variable
    of `env` (`shared.config` lists them), then the flags."""
    config = Config.from_env(env, base=Config.local())
    if args.dynamodb_endpoint:
        config = config.model_copy(update={"dynamodb_endpoint": args.dynamodb_endpoint})
    return config


def run(args: argparse.Namespace) -> int:
    local_environment()
    config = configuration(args, os.environ)
    # Metrics are off locally; Powertools still warns when a handler published none.
    warnings.filterwarnings("ignore", "No application metrics to publish")
    from devserver.background import Background
    from devserver.server import DevServer

    # The port first: if it is taken, say so before anything else starts.
    try:
        server = DevServer(args.host, args.port, verbose=args.verbose)
    except OSError as exc:
        print(
            f"emit dev: cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); "
            "is another emit dev running? Choose another port with --port.",
            file=sys.stderr,
        )
        return 1
    if not (os.environ.get("POWERTOOLS_LOG_LEVEL") or os.environ.get("LOG_LEVEL")):
        # The console shows the banner and errors (and requests with --verbose), no more.
        from shared.observability import logger

        logger.setLevel(logging.WARNING)

    from devserver.wake import WakeServer

    port = wake_port(args, server.server_port)
    try:  # issue 19: the wake WebSocket, on a port of its own
        wake = WakeServer(args.host, port)
    except OSError as exc:
        print(
            f"emit dev: cannot listen for wake on {args.host}:{port} ({exc.strerror or exc}); "
            "choose another port with --wake-port.",
            file=sys.stderr,
        )
        server.server_close()
        return 1
    config = config.model_copy(update={"wake_url": wake.url})

    with ExitStack() as stack:
        stack.callback(server.server_close)
        stack.callback(wake.stop)
        from moto import mock_aws

        # S3 (large payloads) stays in memory either way; with an endpoint, DynamoDB calls
        # pass through the mock to it.
        endpoint = config.dynamodb_endpoint
        passthrough = [re.escape(endpoint.rstrip("/")) + ".*"] if endpoint else []
        stack.enter_context(mock_aws(config={"core": {"passthrough": {"urls": passthrough, "services": []}}}))
        test_clock = TestClock() if args.test_clock else None
        runtime = build_runtime(config=config, fast=True, wake_poster=wake, clock=test_clock)
        # Hints' posts apart from the stream reader every space shares, as on AWS.
        runtime.wake.sender = ThreadSender(runtime.wake)
        dev_token = config.dev_token
        install(runtime)
        if dev_token is None:
            minted = runtime.tokens.mint(NewToken(scopes=["admin"], name=f"emit dev {secrets.token_hex(2)}"))
            dev_token = str(minted["token"])
        server.test_clock, server.admin_token = test_clock, dev_token
        import_handlers()
        background = Background(runtime, endpoint=config.dynamodb_endpoint)
        background.start()
        if test_clock is not None:
            test_clock.after_advance = background.tick_now
        stack.callback(background.stop)
        from devserver.wake import LaterThread

        later = LaterThread(runtime)
        later.start()
        stack.callback(later.stop)
        wake.start()
        banner(dev_token, wake.url, test_clock is not None, f"http://{args.host}:{server.server_port}")
        server.serve_forever(poll_interval=0.2)
    return 0


def banner(dev_token: str, wake_url: str, test_clock: bool, url: str) -> None:
    """What `emit dev` prints once it is ready, `listening on` last."""
    print(f"emit dev: admin token {dev_token}", flush=True)
    print(f"emit dev: wake on {wake_url}", flush=True)
    if test_clock:
        print(f"emit dev: test clock on POST {CLOCK_PATH} (advanceMs)", flush=True)
    print(f"emit dev: listening on {url}", flush=True)


def wake_port(args: argparse.Namespace, http_port: int) -> int:
    """The wake WebSocket's port: `--wake-port`, else the one after the HTTP port (8788 by
    default), or a free one when the HTTP port was (`--port 0`)."""
    if args.wake_port is not None:
        return int(args.wake_port)
    return 0 if args.port == 0 else http_port + 1


def import_handlers() -> None:
    """Import every function's module now, on one thread, as Lambda's cold starts would
    before any request: a request thread and a background thread importing Powertools'
    modules at the same moment can find one half-initialized (an ImportError, so a 500)."""
    wake = {route.function for route in WAKE_ROUTES if route.function is not None}
    for function in sorted({route.function for route in ROUTES} | {"stream_handler", "clock_handler"} | wake):
        importlib.import_module(f"functions.{function}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="emit dev", description="Run the whole emit service locally.")
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except KeyboardInterrupt:  # Ctrl-C, while starting or serving: a quiet stop
        return 0


if __name__ == "__main__":
    sys.exit(main())
