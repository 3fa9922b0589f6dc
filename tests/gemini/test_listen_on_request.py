"""A client that starts the server with ``capabilities.listenOnRequest`` (VS Code's extension) gets
no listening port until it asks (``contextCompanion.openListeners``): the Gemini CLI companion's and
Claude Code's ports are reserved (their numbers go into the terminals' environment) but refuse
connections, and neither discovery file nor lock file exists, until a terminal opens; the MCP
endpoint (``--mcp-endpoint``) opens when an MCP client is about to attach."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

ON_REQUEST = {"capabilities": {"listenOnRequest": True}}
OPEN = "contextCompanion.openListeners"
STATUS = "contextCompanion.companionStatus"


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _mcp_announcements(run_dir: Path) -> list[Path]:
    return [p for p in run_dir.rglob("*.json") if '"mcp-http"' in p.read_text(encoding="utf-8")]


async def test_nothing_listens_until_a_terminal_opens(start_editor, workspace: Path, tmp_path: Path):
    editor = await start_editor(
        workspace, options=ON_REQUEST, client_name="Visual Studio Code", args=("--mcp-endpoint",)
    )
    started = await editor.wait_started()
    port = started["geminiCli"]["port"]
    assert started["geminiCli"]["env"]["GEMINI_CLI_IDE_SERVER_PORT"] == str(port)  # known before it listens
    status = await editor.command(STATUS)
    claude_port = status["claudeCode"]["port"]
    assert status["geminiCli"]["running"] and not status["geminiCli"]["listening"]
    assert status["claudeCode"]["running"] and not status["claudeCode"]["listening"]
    assert status["geminiCli"]["discoveryFile"] is None and status["claudeCode"]["lockFile"] is None
    assert not _accepts(port) and not _accepts(claude_port)
    assert not list(editor.ide_dir.glob("*.json")) if editor.ide_dir.exists() else True
    claude_ide = tmp_path / "home" / ".claude" / "ide"
    assert not claude_ide.exists() or not list(claude_ide.glob("*.lock"))
    assert not _mcp_announcements(tmp_path / "run")

    opened = await editor.command(OPEN, {"for": "terminal"})
    assert opened["geminiCli"]["listening"] and opened["claudeCode"]["listening"]
    assert not opened["mcp"]["listening"]  # the terminal agents' listeners only
    assert opened["geminiCli"]["port"] == port and opened["claudeCode"]["port"] == claude_port
    assert _accepts(port) and _accepts(claude_port)
    (discovery,) = editor.ide_dir.glob(f"gemini-ide-server-*-{port}.json")
    assert json.loads(discovery.read_text())["authToken"] == started["geminiCli"]["env"]["GEMINI_CLI_IDE_AUTH_TOKEN"]
    (lock,) = claude_ide.glob("*.lock")
    assert lock.name == f"{claude_port}.lock"
    assert not _mcp_announcements(tmp_path / "run")

    opened = await editor.command(OPEN, {"for": "mcp"})
    assert opened["mcp"]["listening"]
    (announcement,) = _mcp_announcements(tmp_path / "run")
    url = json.loads(announcement.read_text())["url"]
    assert _accepts(int(url.rsplit(":", 1)[1].split("/")[0]))
    again = await editor.command(OPEN, {"for": "mcp"})  # once: a second ask opens nothing new
    assert again["mcp"]["listening"] and _mcp_announcements(tmp_path / "run") == [announcement]


async def test_without_the_capability_everything_listens_at_start(start_editor, workspace: Path):
    editor = await start_editor(workspace)
    port = (await editor.wait_started())["geminiCli"]["port"]
    status = await editor.command(STATUS)
    assert status["geminiCli"]["listening"] and status["claudeCode"]["listening"]
    assert _accepts(port) and _accepts(status["claudeCode"]["port"])


@pytest.mark.parametrize("arg", [{"for": "everything"}, {"what": "terminal"}, "terminal"])
async def test_open_listeners_names_a_bad_argument(start_editor, workspace: Path, arg: object):
    editor = await start_editor(workspace, options=ON_REQUEST)
    await editor.wait_started()
    with pytest.raises(Exception, match=r"contextCompanion.openListeners: (for|what|the argument)"):
        await editor.command(OPEN, arg)
