"""The Gemini CLI companion as the editor sees it: discovery file, terminal environment, status."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import stat
from pathlib import Path

from lsprotocol import types as t

STATUS = "contextCompanion.companionStatus"


async def test_discovery_file_names_the_editor_process_and_is_private(start_editor, workspace: Path):
    editor = await start_editor(workspace, client_name="Neovim")
    started = await editor.wait_started()
    port = started["geminiCli"]["port"]
    # The CLI looks for the grandparent of its shell: the parent of the process speaking LSP.
    path = editor.ide_dir / f"gemini-ide-server-{os.getppid()}-{port}.json"
    assert path.is_file(), sorted(p.name for p in editor.ide_dir.iterdir())
    data = json.loads(path.read_text())
    env = started["geminiCli"]["env"]
    # Which server wrote it (the server's own pid, alive, not the editor's): see docs/reliability.md.
    stamp = data.pop("contextCompanion")
    assert isinstance(stamp["serverPid"], int) and stamp["serverPid"] not in (os.getpid(), os.getppid())
    assert os.path.exists(f"/proc/{stamp['serverPid']}") and isinstance(stamp["serverStartTime"], int)
    assert data == {
        "port": port,
        "workspacePath": str(workspace),
        "authToken": env["GEMINI_CLI_IDE_AUTH_TOKEN"],
        "ideInfo": {"name": "neovim", "displayName": "Neovim"},
    }
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.getuid()
    assert len(env["GEMINI_CLI_IDE_AUTH_TOKEN"]) >= 32
    assert env["GEMINI_CLI_IDE_SERVER_PORT"] == str(port)
    assert env["GEMINI_CLI_IDE_WORKSPACE_PATH"] == str(workspace)
    assert env["GEMINI_CLI_IDE_PID"] == str(os.getppid())


async def test_ide_info_follows_the_client_name(start_editor, workspace: Path):
    editor = await start_editor(workspace, client_name="Visual Studio Code")
    port = (await editor.wait_started())["geminiCli"]["port"]
    (path,) = editor.ide_dir.glob(f"gemini-ide-server-*-{port}.json")
    assert json.loads(path.read_text())["ideInfo"] == {"name": "vscode", "displayName": "VS Code"}


async def test_discovery_file_is_rewritten_when_folders_change(start_editor, workspace: Path, tmp_path: Path):
    other = tmp_path / "other"
    other.mkdir()
    editor = await start_editor(workspace)
    port = (await editor.wait_started())["geminiCli"]["port"]
    editor.client.workspace_did_change_workspace_folders(
        t.DidChangeWorkspaceFoldersParams(
            event=t.WorkspaceFoldersChangeEvent(added=[t.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[])
        )
    )
    again = await editor.wait_started(2)
    joined = os.pathsep.join([str(workspace), str(other)])
    assert again["geminiCli"]["env"]["GEMINI_CLI_IDE_WORKSPACE_PATH"] == joined
    (path,) = editor.ide_dir.glob(f"gemini-ide-server-*-{port}.json")
    assert json.loads(path.read_text())["workspacePath"] == joined
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_discovery_file_is_gone_when_shutdown_is_answered(start_editor, workspace: Path):
    editor = await start_editor(workspace)
    port = (await editor.wait_started())["geminiCli"]["port"]
    (path,) = editor.ide_dir.glob(f"gemini-ide-server-*-{port}.json")
    await editor.client.shutdown_async(None)
    editor.shut_down = True
    assert not path.exists()
    assert list(editor.ide_dir.glob("*.json")) == []
    editor.client.exit(None)


async def test_status_command_reports_the_endpoint(start_editor, workspace: Path):
    editor = await start_editor(workspace)
    started = await editor.wait_started()
    status = await editor.command(STATUS)
    port = started["geminiCli"]["port"]
    (path,) = editor.ide_dir.glob(f"gemini-ide-server-*-{port}.json")
    assert status["geminiCli"] == {
        "running": True,
        "port": port,
        "discoveryFile": str(path),
        "connectedClients": 0,
        "listening": True,
    }
    assert set(status) == {"geminiCli", "claudeCode"}


async def test_disabled_by_setting_starts_nothing(start_editor, workspace: Path):
    editor = await start_editor(workspace, options={"companion": {"geminiCli": {"enabled": False}}})
    status = await editor.command(STATUS)
    assert status["geminiCli"] == {
        "running": False,
        "port": None,
        "discoveryFile": None,
        "connectedClients": 0,
        "listening": False,
    }
    assert editor.started == []
    assert not editor.ide_dir.exists() or list(editor.ide_dir.iterdir()) == []


async def test_capabilities_beside_the_settings_are_not_taken_for_settings(start_editor, workspace: Path):
    options = {"capabilities": {"showDiff": True}, "context": {"maxOpenFiles": 3}}
    editor = await start_editor(workspace, options=options)
    await editor.wait_started()
    assert (await editor.command(STATUS))["geminiCli"]["running"] is True
    assert [m.message for m in editor.client.messages] == []


async def test_endpoint_refuses_a_wrong_token_and_a_foreign_host(start_editor, workspace: Path):
    editor = await start_editor(workspace)
    started = await editor.wait_started()
    port = started["geminiCli"]["port"]
    token = started["geminiCli"]["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})

    def post(**headers: str) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.putrequest("POST", "/mcp", skip_host="Host" in headers)
            for key, value in {"Accept": "application/json, text/event-stream", **headers}.items():
                conn.putheader(key, value)
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body.encode())
            return conn.getresponse().status
        finally:
            conn.close()

    missing = await asyncio.to_thread(post)
    wrong = await asyncio.to_thread(post, Authorization="Bearer nope")
    rebound = await asyncio.to_thread(post, Authorization=f"Bearer {token}", Host=f"evil.example:{port}")
    other_port = await asyncio.to_thread(post, Authorization=f"Bearer {token}", Host="127.0.0.1:1")
    assert (missing, wrong) == (401, 401)
    assert (rebound, other_port) == (403, 403)
