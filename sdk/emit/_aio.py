"""Blocking calls off a worker's event loop, on daemon threads.

Daemon threads rather than an executor: a plain handler that ignores its signal, or a
long poll nobody waits for any more, must not keep the process from exiting once the
worker has released its jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def in_thread(fn: Callable[[], T], *, name: str) -> asyncio.Future[T]:
    """Run `fn` on a new daemon thread; its result or exception settles the future."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            value = context.run(fn)
        except Exception as exc:
            _settle(loop, future, exc)
        except BaseException as exc:  # SystemExit in a handler fails the attempt, it doesn't vanish
            _settle(loop, future, RuntimeError(f"{type(exc).__name__}: {exc}"))
        else:
            _settle(loop, future, value, ok=True)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future


def _settle(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], value: Any, ok: bool = False
) -> None:
    def apply() -> None:
        if future.done():  # nobody waits any more (cancelled): drop it
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    # A closed loop means the worker is gone, and so is any interest in this.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(apply)
