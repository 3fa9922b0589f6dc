"""Fixtures for the MCP server tests: a workspace with memory, the server's environment, and
official-SDK clients over stdio and Streamable HTTP."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import mcp_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ws(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A workspace whose AGENTS.md holds one rule; named ``ws`` unless a test names it (indirect parametrize)."""
    ws = tmp_path / getattr(request, "param", "ws")
    ws.mkdir()
    (ws / "AGENTS.md").write_text("# Project rules\n\n- Indent with tabs.\n", encoding="utf-8")
    return ws


@pytest.fixture
def server_env(tmp_path: Path) -> dict[str, str]:
    """The environment a server process runs with: isolated home, config and runtime dirs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "CONTEXT_COMPANION_CONFIG_DIR": str(tmp_path / "user-config"),
            "CONTEXT_COMPANION_MEMORY__DEBOUNCE_MS": "50",
            "XDG_RUNTIME_DIR": str(runtime),
            "PYTHONPATH": str(ROOT / "server") + os.pathsep + env.get("PYTHONPATH", ""),
        }
    )
    return env


@pytest.fixture
def stdio_client(ws: Path, server_env: dict[str, str]) -> Callable[..., Any]:
    """``async with stdio_client(mode, *flags, on_message=...) as client``: the official Python SDK client."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    @asynccontextmanager
    async def open_client(mode: str = "legacy", *flags: str, on_message: Any = None) -> AsyncIterator[Any]:
        command = mcp_command(ws, "--no-attach", *flags)
        params = StdioServerParameters(command=command[0], args=command[1:], env=server_env, cwd=str(ws))
        async with Client(params, mode=mode, message_handler=on_message, read_timeout_seconds=30) as client:
            yield client

    return open_client
