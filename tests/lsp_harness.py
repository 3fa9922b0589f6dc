"""The real server driven by a pytest-lsp client: helpers for the custom protocol.

A module of its own name (not conftest) so test files can import it whichever conftest pytest
imported first."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import forkserver
import pytest
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = [sys.executable, "-m", "context_companion", "serve"]
CHANGED = "contextCompanion/systemInstructionChanged"


async def start_client(config: ClientServerConfig, *, fork: bool = True) -> LanguageClient:
    """``config.start()``: the client with its server started; the server is forked from the
    pre-imported fork server (tests/forkserver.py) where that is the same as starting it afresh
    (and ``fork``: a test marked ``exec_server`` gets a real exec)."""
    if not fork:
        return await config.start()
    forkserver.install()
    with forkserver.forked_asyncio_starts():
        return await config.start()


def fork_servers(request: pytest.FixtureRequest) -> bool:
    """Whether the servers a fixture starts for ``request`` may come from the fork server: not for
    a test marked ``exec_server``, nor one that records ``figures`` (they describe the server users
    start: its exit, its memory)."""
    return request.node.get_closest_marker("exec_server") is None and "figures" not in request.fixturenames


def plain(value: Any) -> Any:
    """pygls hands custom params over as namedtuples: turn them back into JSON-like data."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


async def ws_execute(ws: Any, folder: Path, command: str, timeout: float = 30) -> tuple[dict[str, Any], dict[str, Any]]:
    """Over an open JSON-RPC WebSocket: initialize with ``folder``, then run ``command``; the
    initialize answer and the command's answer."""
    init = {"capabilities": {}, "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}]}
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
    await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    call = {"command": command, "arguments": [{}]}
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": call}))
    answers: dict[int, dict[str, Any]] = {}
    while 2 not in answers:
        reply = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if reply.get("id") in (1, 2):
            answers[reply["id"]] = reply
    return answers[1], answers[2]


class Harness:
    """A started server with helpers for the custom protocol."""

    def __init__(self, client: LanguageClient, workspace: Path, config_dir: Path) -> None:
        self.client = client
        self.workspace = workspace
        self.config_dir = config_dir
        self.pushes: list[dict[str, Any]] = []
        self._push_event = asyncio.Event()

        @client.feature(CHANGED)
        def _on_changed(params: Any) -> None:
            self.pushes.append(plain(params))
            self._push_event.set()

    async def command(self, name: str, *args: Any) -> Any:
        result = await self.client.workspace_execute_command_async(
            t.ExecuteCommandParams(command=name, arguments=list(args))
        )
        return plain(result)

    async def wait_push(self, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.pushes) < count:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"expected {count} push(es), got {len(self.pushes)}: {self.pushes}")
            self._push_event.clear()
            try:
                await asyncio.wait_for(self._push_event.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return self.pushes

    @property
    def server_pid(self) -> int:
        return int(self.client._server.pid)  # pygls' JsonRPCClient keeps the process it started

    def send_raw(self, message: dict[str, Any]) -> None:
        """Send a JSON-RPC message as is, bypassing the client's typing (for malformed input)."""
        self.client.protocol._send_data({"jsonrpc": "2.0", **message})

    def uri(self, rel: str) -> str:
        return (self.workspace / rel).as_uri()

    def open(self, rel: str, text: str | None = None, language: str = "plaintext") -> str:
        path = self.workspace / rel
        if text is None:
            text = path.read_text(encoding="utf-8") if path.exists() else ""
        uri = path.as_uri()
        self.client.text_document_did_open(
            t.DidOpenTextDocumentParams(
                text_document=t.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
            )
        )
        return uri

    def close(self, rel: str) -> None:
        self.client.text_document_did_close(
            t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=self.uri(rel)))
        )

    def cursor(
        self, uri: str, line: int, character: int, selections: list[tuple[int, int, int, int]] | None = None
    ) -> None:
        params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        if selections is not None:
            params["selections"] = [
                {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}} for a, b, c, d in selections
            ]
        self.client.protocol.notify("contextCompanion/didChangeCursor", params)
