"""The end-to-end tests run real `emit dev` processes: the session's one is the `dev`
fixture (also called `dev_server`, tests/conftest.py); tests/dev.py starts others."""

from tests.dev import DEV_TOKEN, DevServer, free_port, start_dev

__all__ = ["DEV_TOKEN", "DevServer", "free_port", "start_dev"]
