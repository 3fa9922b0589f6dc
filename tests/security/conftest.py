"""Fixtures for the attack tests live in sockets_support (importable by name from the tests)."""

from sockets_support import runtime, server_env, start, stdio  # noqa: F401  (fixtures)
