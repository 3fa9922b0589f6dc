"""``context-companion mcp`` driven by the official MCP TypeScript SDK client (pinned in
tests/mcp/node/package-lock.json), over stdio and Streamable HTTP.

Node and npm are required: without them these tests fail and say so (CI has both). ``npm ci``
runs here, once per session, when node_modules is missing or older than the lock file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import node_packages
import pytest
from mcp_helpers import http_server, mcp_command

NODE_DIR = Path(__file__).parent / "node"


@pytest.fixture(scope="session")
def node_client() -> list[str]:
    node = node_packages.ensure(NODE_DIR, "the MCP interop tests (the official TypeScript SDK client)")
    return [node, str(NODE_DIR / "client.mjs")]


def _run(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"TypeScript SDK client failed:\n{done.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _assert_full(report: dict[str, Any]) -> None:
    assert sorted(report["tools"]) == [
        "add_memory",
        "build_messages",
        "get_system_instruction",
        "get_turn_context",
        "show_memory",
    ]
    assert {"context-companion://instruction", "context-companion://turn-context"} <= set(report["resources"])
    assert 0 <= report["firstUpdateMs"] <= 2000


def test_typescript_client_over_stdio(node_client: list[str], ws: Path, server_env: dict[str, str]) -> None:
    command = [*node_client, "stdio", str(ws), *mcp_command(ws, "--no-attach")]
    _assert_full(_run(command, server_env))


async def test_typescript_client_over_http(node_client: list[str], ws: Path, server_env: dict[str, str]) -> None:
    import asyncio

    async with http_server(ws, server_env) as entry:
        command = [*node_client, "http", str(ws), entry["url"], entry["token"]]
        report = await asyncio.to_thread(_run, command, server_env)
    _assert_full(report)
    assert "401" in report["wrongTokenRefused"]
