"""End-to-end fixtures: the real server process driven by a pytest-lsp client."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "context_companion", "serve"]
CHANGED = "contextCompanion/systemInstructionChanged"


def plain(value: Any) -> Any:
    """pygls hands custom params over as namedtuples: turn them back into JSON-like data."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


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


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    d = tmp_path / "user-config"
    d.mkdir()
    return d


@pytest_asyncio.fixture
async def start(tmp_path: Path, config_dir: Path) -> AsyncIterator[Callable[..., Any]]:
    started: list[LanguageClient] = []

    async def _start(
        workspace: Path,
        *,
        settings: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        capabilities: str = "visual-studio-code",
        position_encodings: list[str] | None = None,
        configuration: dict[str, Any] | None = None,
        folders: list[Path] | None = None,
    ) -> Harness:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        server_env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
        server_env.update(
            {
                "HOME": str(home),
                "CONTEXT_COMPANION_CONFIG_DIR": str(config_dir),
                "CONTEXT_COMPANION_MEMORY__DEBOUNCE_MS": server_env.get("CC_TEST_DEBOUNCE", "50"),
            }
        )
        server_env.update(env or {})
        config = ClientServerConfig(server_command=SERVER, server_env=server_env)
        client = await config.start()
        started.append(client)
        if configuration is not None:
            client.set_configuration(configuration, section="contextCompanion")
        harness = Harness(client, workspace, config_dir)
        caps = client_capabilities(capabilities)
        if position_encodings is not None:
            caps.general = t.GeneralClientCapabilities(position_encodings=position_encodings)
        if configuration is None and caps.workspace is not None:
            caps.workspace.configuration = False
        folder_list = folders if folders is not None else [workspace]
        result = await client.initialize_session(
            t.InitializeParams(
                capabilities=caps,
                workspace_folders=[t.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folder_list],
                initialization_options=settings,
            )
        )
        harness.init_result = result
        return harness

    yield _start
    for client in started:
        try:
            await asyncio.wait_for(client.shutdown_session(), 10)
        except Exception:
            pass
        await client.stop()
