"""A server imports a bridge (and the MCP SDK, the HTTP host, the WebSocket library under it) only
when that bridge is switched on. The real server (``context-companion serve``'s entry point) runs
in a process that writes ``sys.modules`` to stderr when it exits; each case initializes, opens a
document, asks for the instruction and the companion status (the boot and the bridges' start are
done by then), shuts down and exits."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

BRIDGE_MODULES = (
    "mcp",
    "mcp_types",
    "uvicorn",
    "starlette",
    "sse_starlette",
    "websockets",
    "context_companion.bridges.http_host",
    "context_companion.bridges.gemini.companion",
    "context_companion.bridges.claude_code",
    "context_companion.bridges.mcp_server",
    "context_companion.bridges.mcp_main",
)
_MARK = "sys.modules at exit: "
_SERVE_AND_LIST_MODULES = f"""
import atexit, json, sys
atexit.register(lambda: sys.stderr.write({_MARK!r} + json.dumps(sorted(sys.modules)) + "\\n"))
from context_companion.cli import main
sys.argv[0] = "context-companion"
sys.exit(main())
"""
OFF = {"companion": {"geminiCli": {"enabled": False}, "claudeCode": {"enabled": False}}}


class _Stdio:
    """A minimal LSP client over the server's stdin/stdout (Content-Length framing)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._next = 0

    def send(self, method: str, params: Any, *, request: bool = True) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        msg_id = None
        if request:
            self._next += 1
            msg_id = message["id"] = self._next
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return msg_id

    async def answer(self, msg_id: int | None) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            headers = await asyncio.wait_for(self.proc.stdout.readuntil(b"\r\n\r\n"), 60)
            length = next(
                int(h.split(b":")[1]) for h in headers.split(b"\r\n") if h.lower().startswith(b"content-length")
            )
            message = json.loads(await asyncio.wait_for(self.proc.stdout.readexactly(length), 60))
            if message.get("id") == msg_id and "method" not in message:
                assert "error" not in message, message
                return dict(message)
            if "id" in message and "method" in message:  # a server → client request: answer null
                reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}).encode()
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(reply) + reply)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        return await self.answer(self.send(method, params))


async def _imported(workspace: Path, tmp_path: Path, options: Any, *args: str) -> set[str]:
    """Every module the server imported over a short session with these initializationOptions."""
    (workspace / "AGENTS.md").write_text("# Rules\n\nBe brief.\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "TMPDIR": str(tmp_path)})
    env["CONTEXT_COMPANION_CONFIG_DIR"] = str(tmp_path / "config")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SERVE_AND_LIST_MODULES,
        "serve",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    client = _Stdio(proc)
    try:
        folder = {"uri": workspace.as_uri(), "name": workspace.name}
        init = {"processId": os.getpid(), "capabilities": {}, "workspaceFolders": [folder]}
        await client.request("initialize", {**init, "initializationOptions": options})
        client.send("initialized", {}, request=False)
        doc = {"uri": (workspace / "a.py").as_uri(), "languageId": "python", "version": 1, "text": "x = 1\n"}
        client.send("textDocument/didOpen", {"textDocument": doc}, request=False)
        call = {"command": "contextCompanion.getSystemInstruction", "arguments": [{}]}
        await client.request("workspace/executeCommand", call)
        await client.request("workspace/executeCommand", {"command": "contextCompanion.companionStatus"})
        await client.request("shutdown", None)
        client.send("exit", None, request=False)
        _, stderr = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = stderr.decode(errors="replace")
    assert _MARK in text, f"the server did not exit normally: {text[-500:]}"
    # A shutdown that comes while a bridge starts (this session is short) must not log an error.
    assert " ERROR " not in text and "Traceback" not in text, text[-2000:]
    modules = set(json.loads(text.split(_MARK, 1)[1].splitlines()[0]))
    assert "context_companion.lsp.server" in modules
    return modules


def _bridges(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in BRIDGE_MODULES or m.split(".")[0] in BRIDGE_MODULES[:6])


async def test_a_server_with_every_bridge_off_imports_no_bridge(workspace: Path, tmp_path: Path) -> None:
    assert _bridges(await _imported(workspace, tmp_path, OFF)) == []


@pytest.mark.parametrize(
    ("options", "args", "expected"),
    [
        (
            {"companion": {"claudeCode": {"enabled": True}, "geminiCli": {"enabled": False}}},
            (),
            "context_companion.bridges.claude_code",
        ),
        ({"companion": {"geminiCli": {"enabled": True}}}, (), "context_companion.bridges.gemini.companion"),
        (OFF, ("--mcp-endpoint",), "context_companion.bridges.mcp_server"),
    ],
    ids=["claudeCode", "geminiCli", "mcp-endpoint"],
)
async def test_a_bridge_switched_on_is_imported(
    workspace: Path, tmp_path: Path, options: Any, args: tuple[str, ...], expected: str
) -> None:
    """The other side: the check above sees a bridge when one is imported."""
    assert expected in await _imported(workspace, tmp_path, options, *args)


async def test_the_default_configuration_loads_no_server_library_until_an_agent_connects(
    workspace: Path, tmp_path: Path
) -> None:
    """By default the Gemini CLI companion and Claude Code's integration are on: both bind their
    port and announce it, but neither the HTTP server (uvicorn, starlette), the WebSocket library
    nor the MCP SDK is loaded before an agent connects (tests/gemini and tests/claude connect real
    clients to a server started this way); the standalone MCP server is not loaded."""
    imported = await _imported(workspace, tmp_path, None)
    assert "context_companion.bridges.gemini.companion" in imported
    assert "context_companion.bridges.claude_code" in imported
    assert _bridges(imported) == [
        "context_companion.bridges.claude_code",
        "context_companion.bridges.gemini.companion",
        "context_companion.bridges.http_host",
    ]
