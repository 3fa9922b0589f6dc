"""Fixtures for Gemini CLI's IDE companion: the real server over stdio, a private temp dir (the
discovery files live in ``<temp dir>/gemini/ide``), and a client that records our notifications."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp_harness import fork_servers, plain, start_client
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "context_companion", "serve"]
STARTED = "contextCompanion/companionStarted"


class Editor:
    """A started server and what it told the editor."""

    def __init__(self, client: LanguageClient, workspace: Path, tmpdir: Path) -> None:
        self.client = client
        self.workspace = workspace
        self.tmpdir = tmpdir
        self.started: list[dict[str, Any]] = []
        self.shut_down = False  # the test ended the session itself
        self._event = asyncio.Event()

        @client.feature(STARTED)
        def _on_started(params: Any) -> None:
            started = plain(params)
            if "geminiCli" in started:  # the Claude Code integration announces itself with its own key
                self.started.append(started)
                self._event.set()

    @property
    def ide_dir(self) -> Path:
        return self.tmpdir / "gemini" / "ide"

    async def wait_started(self, count: int = 1, timeout: float = 20.0) -> dict[str, Any]:
        async def wait() -> None:
            while len(self.started) < count:
                self._event.clear()
                await self._event.wait()

        await asyncio.wait_for(wait(), timeout)
        return self.started[count - 1]

    async def command(self, name: str, *args: Any) -> Any:
        result = await self.client.workspace_execute_command_async(
            t.ExecuteCommandParams(command=name, arguments=list(args))
        )
        return plain(result)

    def open(self, rel: str, text: str | None = None) -> str:
        path = self.workspace / rel
        if text is None:
            text = path.read_text(encoding="utf-8")
        uri = path.as_uri()
        self.client.text_document_did_open(
            t.DidOpenTextDocumentParams(
                text_document=t.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=text)
            )
        )
        return uri

    def cursor(self, uri: str, line: int, character: int, selection: tuple[int, int, int, int] | None = None) -> None:
        params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        if selection is not None:
            a, b, c, d = selection
            params["selections"] = [{"start": {"line": a, "character": b}, "end": {"line": c, "character": d}}]
        self.client.protocol.notify("contextCompanion/didChangeCursor", params)


@pytest_asyncio.fixture
async def start_editor(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Callable[..., Any]]:
    editors: list[Editor] = []
    fork = fork_servers(request)

    async def _start(
        workspace: Path,
        *,
        options: dict[str, Any] | None = None,
        client_name: str = "Neovim",
        process_id: int | None = None,
        folders: list[Path] | None = None,
        args: tuple[str, ...] = (),
    ) -> Editor:
        tmpdir = tmp_path / "tmp"
        tmpdir.mkdir(exist_ok=True)
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "GEMINI_CLI_"))}
        env.update({"HOME": str(home), "TMPDIR": str(tmpdir), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")})
        (tmp_path / "run").mkdir(mode=0o700, exist_ok=True)
        env.update({"XDG_RUNTIME_DIR": str(tmp_path / "run"), "CLAUDE_CONFIG_DIR": str(home / ".claude")})
        client = await start_client(ClientServerConfig(server_command=[*SERVER, *args], server_env=env), fork=fork)
        editor = Editor(client, workspace, tmpdir)
        editors.append(editor)
        caps = client_capabilities("neovim")
        if caps.workspace is not None:
            caps.workspace.configuration = False
        await client.initialize_session(
            t.InitializeParams(
                capabilities=caps,
                process_id=os.getpid() if process_id is None else process_id,
                client_info=t.ClientInfo(name=client_name),
                workspace_folders=[t.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in (folders or [workspace])],
                initialization_options=options,
            )
        )
        return editor

    yield _start
    for editor in editors:
        if not editor.shut_down:
            try:
                await asyncio.wait_for(editor.client.shutdown_session(), 10)
            except Exception:
                pass
        await editor.client.stop()
