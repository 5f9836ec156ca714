"""The emit job queue's Python SDK and command line."""
