"""``context-companion mcp`` attached to a running language server (opened by a pytest-lsp client):
what the editor opened is what the agent sees through MCP."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as t
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_helpers import mcp_command
from pytest_lsp import ClientServerConfig, client_capabilities


async def _language_server(ws: Path, env: dict[str, str]) -> Any:
    command = [sys.executable, "-m", "context_companion", "serve", "--mcp-endpoint"]
    client = await ClientServerConfig(server_command=command, server_env=env).start()
    await client.initialize_session(
        t.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[t.WorkspaceFolder(uri=ws.as_uri(), name=ws.name)],
        )
    )
    return client


async def _announced(env: dict[str, str]) -> dict[str, Any]:
    folder = Path(env["XDG_RUNTIME_DIR"]) / "context-companion"
    for _ in range(300):
        for path in folder.glob("server-*.json"):
            return dict(json.loads(path.read_text()))
        await asyncio.sleep(0.05)
    raise AssertionError("the language server announced no MCP endpoint")


@pytest.mark.parametrize("ws", ["ws", "my proj ünï #1"], indirect=True)
async def test_a_file_opened_in_the_editor_is_in_the_turn_context(ws: Path, server_env: dict[str, str]) -> None:
    lsp = await _language_server(ws, server_env)
    try:
        source = ws / "main.py"
        source.write_text("print('hi')\n", encoding="utf-8")
        lsp.text_document_did_open(
            t.DidOpenTextDocumentParams(
                text_document=t.TextDocumentItem(uri=source.as_uri(), language_id="python", version=1, text="x = 1\n")
            )
        )
        selection = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}
        lsp.protocol.notify(
            "contextCompanion/didChangeCursor",
            {"textDocument": {"uri": source.as_uri()}, "position": selection["end"], "selections": [selection]},
        )
        entry = await _announced(server_env)
        assert entry["transport"] == "mcp-http" and entry["workspaceFolders"] == [str(ws)]

        command = mcp_command(ws)  # attach is automatic: exactly one server matches
        params = StdioServerParameters(command=command[0], args=command[1:], env=server_env, cwd=str(ws))
        async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
            assert "attached to the editor" in (client.instructions or "")
            result = await client.call_tool("get_turn_context", {"session": "agent"})
            assert not result.is_error, result.content[0].text
            turn = result.structured_content
            assert turn["kind"] == "full"
            assert turn["context"]["activeFile"]["path"] == str(source)
            assert "x = 1" in json.dumps(turn)  # the selection in the editor's text, not the file on disk
            instruction = await client.call_tool("get_system_instruction", {})
            assert "Indent with tabs." in instruction.content[0].text
    finally:
        await asyncio.wait_for(lsp.shutdown_session(), 10)


async def test_attach_without_a_server_is_a_clear_error(ws: Path, server_env: dict[str, str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *mcp_command(ws, "--attach"), env=server_env, stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "--attach: no language server with an MCP endpoint found for" in err.decode()


async def test_server_pid_attaches_to_that_window_when_two_serve_the_folder(
    ws: Path, server_env: dict[str, str]
) -> None:
    """Two editor windows on one folder: plain --attach refuses to guess; --server-pid picks the named one."""
    first = await _language_server(ws, server_env)
    second = await _language_server(ws, server_env)
    try:
        opened = {}
        for client, name in ((first, "first.py"), (second, "second.py")):
            source = ws / name
            source.write_text("x = 1\n", encoding="utf-8")
            client.text_document_did_open(
                t.DidOpenTextDocumentParams(
                    text_document=t.TextDocumentItem(
                        uri=source.as_uri(), language_id="python", version=1, text="x = 1\n"
                    )
                )
            )
            opened[client._server.pid] = str(source)
        folder = Path(server_env["XDG_RUNTIME_DIR"]) / "context-companion"
        for _ in range(300):
            if len(list(folder.glob("server-*.json"))) == 2:
                break
            await asyncio.sleep(0.05)

        guess = await asyncio.create_subprocess_exec(
            *mcp_command(ws, "--attach"),
            env=server_env,
            stdin=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(guess.communicate(), 30)
        assert guess.returncode == 2
        assert "--attach: 2 language servers with an MCP endpoint found for" in err.decode()

        pid = second._server.pid
        command = mcp_command(ws, "--attach", "--server-pid", str(pid))
        params = StdioServerParameters(command=command[0], args=command[1:], env=server_env, cwd=str(ws))
        async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
            result = await client.call_tool("get_turn_context", {"session": "agent"})
            assert not result.is_error, result.content[0].text
            assert result.structured_content["context"]["activeFile"]["path"] == opened[pid]
    finally:
        await asyncio.wait_for(first.shutdown_session(), 10)
        await asyncio.wait_for(second.shutdown_session(), 10)


async def test_server_pid_waits_for_a_live_server_that_has_not_announced_yet(
    ws: Path, server_env: dict[str, str]
) -> None:
    """VS Code may start ``mcp --attach --server-pid`` the moment the language server opened its endpoint, before
    the announcement file is on disk: the relay looks again while that process lives instead of failing at once."""
    server = await _language_server(ws, server_env)
    try:
        await _announced(server_env)
        folder = Path(server_env["XDG_RUNTIME_DIR"]) / "context-companion"
        (announcement,) = folder.glob("server-*.json")
        hidden = announcement.with_name("later.tmp")
        announcement.rename(hidden)  # as if not written yet
        command = mcp_command(ws, "--attach", "--server-pid", str(server._server.pid))
        relay = await asyncio.create_subprocess_exec(
            *command,
            env=server_env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        await asyncio.sleep(1.0)
        hidden.rename(announcement)  # announced a second after the relay started
        await asyncio.sleep(2.0)
        assert relay.returncode is None  # it found the server and relays (it used to exit 2 at once)
        relay.terminate()
        _, err = await asyncio.wait_for(relay.communicate(), 30)
        assert "no language server" not in err.decode() and "Traceback" not in err.decode(), err.decode()
    finally:
        await asyncio.wait_for(server.shutdown_session(), 10)


async def test_server_pid_of_no_such_server_is_a_clear_error(ws: Path, server_env: dict[str, str]) -> None:
    for args, message in (
        (("--attach", "--server-pid", "999999999"), "--server-pid 999999999: no language server with that process id"),
        (("--server-pid", "0"), "--server-pid 0: must be a positive process id"),
        (("--no-attach", "--server-pid", "5"), "--server-pid: cannot be combined with --no-attach"),
    ):
        process = await asyncio.create_subprocess_exec(
            *mcp_command(ws, *args), env=server_env, stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(process.communicate(), 30)
        assert process.returncode == 2, err.decode()
        assert message in err.decode()
        assert "Traceback" not in err.decode()


async def test_memory_elsewhere_leaves_the_memory_files_out_for_that_agent_only(
    ws: Path, server_env: dict[str, str]
) -> None:
    """VS Code's chat gets the memory in its system message (chat instructions) and its MCP server is started
    with --memory-elsewhere: through that connection the instruction, the turn context, their resources and the
    prompt leave the memory files out; another agent attached to the same language server still gets them."""
    (ws / "pkg").mkdir()
    (ws / "pkg" / "AGENTS.md").write_text("- Sub-folder marker PKG-4242.\n", encoding="utf-8")
    source = ws / "pkg" / "mod.py"
    source.write_text("x = 1\n", encoding="utf-8")
    lsp = await _language_server(ws, server_env)
    try:
        lsp.text_document_did_open(
            t.DidOpenTextDocumentParams(
                text_document=t.TextDocumentItem(uri=source.as_uri(), language_id="python", version=1, text="x = 1\n")
            )
        )
        entry = await _announced(server_env)

        def params(*flags: str) -> StdioServerParameters:
            command = mcp_command(ws, "--attach", "--server-pid", str(entry["pid"]), *flags)
            return StdioServerParameters(command=command[0], args=command[1:], env=server_env, cwd=str(ws))

        async with (
            Client(params("--memory-elsewhere"), mode="legacy", read_timeout_seconds=30) as chat,
            Client(params(), mode="legacy", read_timeout_seconds=30) as other,
        ):
            tools = {tool.name: tool for tool in (await chat.list_tools()).tools}
            for name in ("get_system_instruction", "get_turn_context", "build_messages"):
                assert tools[name].input_schema["properties"]["includeMemory"]["default"] is False, name
                assert tools[name].input_schema["properties"]["session"]["default"] == "vscode-chat", name
            plain = {tool.name: tool for tool in (await other.list_tools()).tools}
            assert plain["get_system_instruction"].input_schema["properties"]["includeMemory"]["default"] is True

            answer = await chat.call_tool("get_system_instruction", {})
            bare = answer.content[0].text
            assert "Indent with tabs." not in bare and "are not repeated here" in bare
            # Its own session (the one of VS Code's chat, as its language model tools): the editor's default
            # session, which the status bar shows, keeps its memory.
            assert answer.structured_content["sessionId"] == "vscode-chat"
            status = await lsp.workspace_execute_command_async(
                t.ExecuteCommandParams(command="contextCompanion.getSystemInstruction", arguments=[{}])
            )
            assert "Indent with tabs." in status["text"]
            whole = (await other.call_tool("get_system_instruction", {"session": "agent"})).content[0].text
            assert "Indent with tabs." in whole and bare.split("---")[0] == whole.split("---")[0]
            asked = await chat.call_tool("get_system_instruction", {"session": "chat2", "includeMemory": True})
            assert "Indent with tabs." in asked.content[0].text  # an explicit ask still gets it

            turn = await chat.call_tool("get_turn_context", {})
            assert turn.structured_content["context"]["activeFile"]["path"] == str(source)
            assert turn.structured_content["memoryUpdates"] == [] and "PKG-4242" not in turn.content[0].text
            theirs = await other.call_tool("get_turn_context", {"session": "agent"})
            assert "PKG-4242" in theirs.content[0].text

            resource = await chat.read_resource("context-companion://instruction")
            assert "Indent with tabs." not in resource.contents[0].text
            resource = await other.read_resource("context-companion://instruction")
            assert "Indent with tabs." in resource.contents[0].text
            resource = await chat.read_resource("context-companion://turn-context")
            assert "PKG-4242" not in resource.contents[0].text
            prompt = await chat.get_prompt("refreshed_system_instruction", {})
            assert "Indent with tabs." not in prompt.messages[0].content.text
            status = await lsp.workspace_execute_command_async(
                t.ExecuteCommandParams(command="contextCompanion.getSystemInstruction", arguments=[{}])
            )
            assert "Indent with tabs." in status["text"]
    finally:
        await asyncio.wait_for(lsp.shutdown_session(), 10)


# A process of the same user on the port a killed server announced: an HTTP server that records every
# request it gets (and answers every proof request with a forged proof).
_IMPOSTOR = r"""
import http.server, json, sys
record = sys.argv[1]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(record, "a") as fh:
            fh.write(self.requestline + "\n" + str(self.headers) + "\n")
        body = json.dumps({"proof": "0" * 64}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_POST = do_GET
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_port, flush=True)
server.serve_forever()
"""


@pytest.mark.parametrize("flag", ["--attach", None])
async def test_an_endpoint_that_cannot_prove_the_token_is_never_given_it(
    ws: Path, server_env: dict[str, str], tmp_path: Path, flag: str | None
) -> None:
    """A leftover announcement of an MCP endpoint whose port another process holds now (its pid and
    start time right: the strongest case): the relay asks for a proof of the token without sending it,
    gets none, and never sends the token. With --attach: exit 2 and one line; without: it serves the
    workspace itself."""
    import subprocess

    from context_companion.procs import process_start_time

    record = tmp_path / "impostor.log"
    impostor = subprocess.Popen([sys.executable, "-c", _IMPOSTOR, str(record)], stdout=subprocess.PIPE, text=True)
    try:
        assert impostor.stdout is not None
        port = int(impostor.stdout.readline())
        folder = Path(server_env["XDG_RUNTIME_DIR"]) / "context-companion"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        token = "killed-servers-token-" + "x" * 30
        entry = {
            "pid": impostor.pid,
            "startTime": process_start_time(impostor.pid),
            "port": port,
            "transport": "mcp-http",
            "workspaceFolders": [str(ws)],
            "token": token,
            "url": f"http://127.0.0.1:{port}/mcp",
        }
        path = folder / f"server-{impostor.pid}-{port}.json"
        path.write_text(json.dumps(entry))
        path.chmod(0o600)
        if flag is not None:
            process = await asyncio.create_subprocess_exec(
                *mcp_command(ws, flag),
                env=server_env,
                stdin=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(process.communicate(), 30)
            assert process.returncode == 2
            lines = err.decode().splitlines()
            assert len(lines) == 1 and "did not prove it holds the token" in lines[0], lines
        else:
            params = StdioServerParameters(command=mcp_command(ws)[0], args=mcp_command(ws)[1:], env=server_env)
            async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
                assert "attached to the editor" not in (client.instructions or "")
                instruction = await client.call_tool("get_system_instruction", {})
                assert "Indent with tabs." in instruction.content[0].text  # read from the workspace itself
        seen = record.read_text() if record.exists() else ""
        assert "/context-companion/proof?nonce=" in seen  # asked for the proof...
        assert token not in seen and "authorization" not in seen.lower()  # ...and never sent the token
    finally:
        impostor.kill()
        impostor.wait()
