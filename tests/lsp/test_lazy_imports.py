"""A server imports a bridge (and the MCP SDK, the HTTP host, the WebSocket library under it) only
when that bridge is switched on. The real server (``context-companion serve``'s entry point) runs
in a process that writes ``sys.modules`` to stderr when it exits; each case initializes, opens a
document, asks for the instruction and the companion status (the boot and the bridges' start are
done by then), shuts down and exits."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from context_companion.heap import PAUSED_THRESHOLD

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


async def _start(
    workspace: Path, tmp_path: Path, script: str, args: tuple[str, ...]
) -> tuple[asyncio.subprocess.Process, _Stdio]:
    """``context-companion serve ARGS`` run by ``script`` (which reports the modules imported) on a workspace with
    one AGENTS.md, in a home, Claude config and temp folder of the test's own."""
    (workspace / "AGENTS.md").write_text("# Rules\n\nBe brief.\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "TMPDIR": str(tmp_path)})
    env["CONTEXT_COMPANION_CONFIG_DIR"] = str(tmp_path / "config")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        "serve",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    return proc, _Stdio(proc)


async def _imported(workspace: Path, tmp_path: Path, options: Any, *args: str) -> set[str]:
    """Every module the server imported over a short session with these initializationOptions."""
    proc, client = await _start(workspace, tmp_path, _SERVE_AND_LIST_MODULES, args)
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


# ------------------------------------------------------------------ what the initialize answer imports

# The libraries of the domain and of the bridges: none is needed to answer initialize (the domain is
# imported on a worker thread once the answer is out: lsp/lifecycle.py). docs/performance.md: process
# start → initialize response against a bare pygls server.
HEAVY = (
    "pydantic",
    "pydantic_core",
    "tiktoken",
    "watchdog",
    "yaml",
    "pathspec",
    "mcp",
    "mcp_types",
    "starlette",
    "sse_starlette",
    "uvicorn",
    "websockets",
    "httpx",
    "anyio",
)
# Every module of ours the answer may have needed: the command line, the protocol layer, the
# command table it advertises and the few helpers those use. A module of the domain core (settings,
# memory, prompt, tokens, the workspace's companion) must not appear here: import it where it is
# used, after the answer.
FIRST_ANSWER_MAY_IMPORT = frozenset(
    {
        "context_companion",
        "context_companion.agents",  # the parser's agent names: the registry, strings only
        "context_companion.agents.registry",
        "context_companion.bridges",
        "context_companion.bridges.watch",
        "context_companion.cli",
        "context_companion.cli.output",
        "context_companion.cli.parser",
        "context_companion.cli.servers",
        "context_companion.context",
        "context_companion.context.positions",
        "context_companion.errors",
        "context_companion.heap",
        "context_companion.lsp",
        "context_companion.lsp.claude_code_endpoint",
        "context_companion.lsp.commands",
        "context_companion.lsp.companions",
        "context_companion.lsp.diagnostics",
        "context_companion.lsp.documents",
        "context_companion.lsp.envelope",
        "context_companion.lsp.framing",
        "context_companion.lsp.gemini",
        "context_companion.lsp.hook_endpoint",
        "context_companion.lsp.lifecycle",
        "context_companion.lsp.main",
        "context_companion.lsp.mcp_endpoint",
        "context_companion.lsp.memory_files",
        "context_companion.lsp.protocol",
        "context_companion.lsp.push",
        "context_companion.lsp.runtime",
        "context_companion.lsp.server",
        "context_companion.lsp.texts",
        "context_companion.lsp.transport",
        "context_companion.uris",
        "context_companion.workspace",
        "context_companion.workspace.commands",
    }
)
_ANSWER_MARK = "sys.modules at the first answer: "
_GC_MARK = "gc thresholds: "  # at the first answer, then at exit
# The server's stdout is tapped: its first write (the initialize answer) also writes sys.modules to
# stderr. Nothing runs on another thread before that answer (the boot starts after it). At exit,
# sys.modules again.
_SERVE_AND_LIST_AT_ANSWER = f"""
import atexit, gc, io, json, os, sys
atexit.register(lambda: sys.stderr.write({_MARK!r} + json.dumps(sorted(sys.modules)) + "\\n"))
atexit.register(lambda: sys.stderr.write({_GC_MARK!r} + json.dumps(gc.get_threshold()) + "\\n"))
class _Tap(io.RawIOBase):
    told = False
    def writable(self):
        return True
    def write(self, data):
        if not _Tap.told:
            _Tap.told = True
            sys.stderr.write({_ANSWER_MARK!r} + json.dumps(sorted(sys.modules)) + "\\n")
            sys.stderr.write({_GC_MARK!r} + json.dumps(gc.get_threshold()) + "\\n")
            sys.stderr.flush()
        return os.write(1, data)
_tapped = sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Tap()), encoding="utf-8")  # kept: the server swaps sys.stdout
from context_companion.cli import main
sys.argv[0] = "context-companion"
sys.exit(main())
"""


async def _imported_at_answer(workspace: Path, tmp_path: Path, options: Any, *args: str) -> tuple[set[str], set[str]]:
    """The modules imported when the initialize answer was written, and those at exit (after the
    boot, an instruction and the companion status)."""
    proc, client = await _start(workspace, tmp_path, _SERVE_AND_LIST_AT_ANSWER, args)
    try:
        folder = {"uri": workspace.as_uri(), "name": workspace.name}
        init = {"processId": os.getpid(), "capabilities": {}, "workspaceFolders": [folder]}
        answer = await client.request("initialize", {**init, "initializationOptions": options})
        assert "capabilities" in answer["result"]
        client.send("initialized", {}, request=False)
        call = {"command": "contextCompanion.getSystemInstruction", "arguments": [{}]}
        instruction = await client.request("workspace/executeCommand", call)
        assert "Be brief." in instruction["result"]["text"]
        await client.request("workspace/executeCommand", {"command": "contextCompanion.companionStatus"})
        await client.request("shutdown", None)
        client.send("exit", None, request=False)
        _, stderr = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = stderr.decode(errors="replace")
    assert _ANSWER_MARK in text and _MARK in text, f"the server did not answer and exit normally: {text[-500:]}"
    assert " ERROR " not in text and "Traceback" not in text, text[-2000:]
    at_answer = set(json.loads(text.split(_ANSWER_MARK, 1)[1].splitlines()[0]))
    at_exit = set(json.loads(text.split(_MARK, 1)[1].splitlines()[0]))
    # The older generations' collections wait over the start-up and come back once the first message
    # is dealt with (heap.pause_older_collections): a server that kept them off would never free old cycles.
    thresholds = [json.loads(part.splitlines()[0]) for part in text.split(_GC_MARK)[1:]]
    first, second, full = gc.get_threshold()  # this interpreter's defaults, as the server's were
    assert thresholds == [[first, PAUSED_THRESHOLD, PAUSED_THRESHOLD], [first, second, full]]
    return at_answer, at_exit


@pytest.mark.parametrize(
    ("options", "args"),
    [(None, ()), (OFF, ()), (None, ("--mcp-endpoint",))],
    ids=["defaults", "bridges-off", "mcp-endpoint"],
)
async def test_the_initialize_answer_imports_no_domain_library_and_only_the_listed_modules(
    workspace: Path, tmp_path: Path, options: Any, args: tuple[str, ...]
) -> None:
    at_answer, at_exit = await _imported_at_answer(workspace, tmp_path, options, *args)
    assert "context_companion.lsp.server" in at_answer
    assert sorted(m for m in at_answer if m.split(".")[0] in HEAVY) == []
    assert (
        sorted(m for m in at_answer if m.split(".")[0] == "context_companion" and m not in FIRST_ANSWER_MAY_IMPORT)
        == []
    )
    # The other side: the session imported the domain and its libraries after the answer, so the
    # check above looks at names that a server does import.
    assert {"pydantic", "tiktoken", "watchdog", "pathspec", "context_companion.workspace.companion"} <= at_exit
