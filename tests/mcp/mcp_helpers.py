"""Helpers for the MCP tests: the server command, an HTTP server process, an editor-like save."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


def mcp_command(ws: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "context_companion", "mcp", "--workspace", str(ws), *extra]


@asynccontextmanager
async def http_server(ws: Path, env: dict[str, str], *flags: str) -> AsyncIterator[dict[str, Any]]:
    """Start ``mcp --http`` on a free port; yield its discovery entry once it is written."""
    process = await asyncio.create_subprocess_exec(
        *mcp_command(ws, "--http", *flags), env=env, stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        line = ""
        while "MCP over Streamable HTTP at" not in line:  # after any warnings
            line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
            assert line, "the server exited before announcing its URL"
        assert "MCP over Streamable HTTP at http://127.0.0.1:" in line, line
        folder = Path(env["XDG_RUNTIME_DIR"]) / "context-companion"
        entry_path = next(folder.glob(f"server-{process.pid}-*.json"))
        entry = json.loads(entry_path.read_text())
        entry["stderr"] = line
        entry["path"] = entry_path
        yield entry
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)


def edit(path: Path, text: str) -> float:
    """Write like an editor's atomic save; return the time of the write."""
    tmp = path.with_name(path.name + ".tmp~")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return time.monotonic()
