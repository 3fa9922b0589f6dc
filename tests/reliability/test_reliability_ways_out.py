"""Every way out of a stdio server with every bridge on and a client connected to each: ``exit``
(after ``shutdown``), end of input (the editor closed our stdin, crashed or was killed), SIGTERM,
SIGINT. Each must stop the Gemini CLI companion, the Claude Code endpoint and the MCP endpoint in
order: exit status 0, every announcement file removed, and nothing at ERROR (no traceback) in
the log, with the default log settings."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from bridge_clients import ClaudeSession, HttpSession, read_json
from lsp_pipe_client import SERVER

STARTED = "contextCompanion/companionStarted"
ALL_BRIDGES = {"companion": {"geminiCli": {"enabled": True}, "claudeCode": {"enabled": True}}}


def _announcements(tmp_path: Path) -> dict[str, list[Path]]:
    return {
        "gemini": sorted((tmp_path / "tmp" / "gemini" / "ide").glob("*.json")),
        "claude": sorted((tmp_path / "claude" / "ide").glob("*.lock")),
        "mcp": sorted((tmp_path / "run" / "context-companion").glob("server-*.json")),
    }


@pytest.mark.parametrize("way_out", ["exit", "end-of-input", "SIGTERM", "SIGINT"])
def test_every_way_out_stops_every_bridge_cleanly(spawn, tmp_path, way_out, figures):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("# Project\n\nUse tabs.\n", encoding="utf-8")
    for d in ("tmp", "claude", "run"):
        (tmp_path / d).mkdir(mode=0o700)  # platformdirs ignores a loose XDG_RUNTIME_DIR
    env = {
        "TMPDIR": str(tmp_path / "tmp"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    proc = spawn([ws], ALL_BRIDGES, env=env, argv=[*SERVER, "--mcp-endpoint"])
    started = proc.wait_notification(STARTED, 2, timeout=30)
    ports = {k: v["port"] for note in started for k, v in note.items() if v}
    assert set(ports) == {"geminiCli", "claudeCode"}, started
    assert proc.wait_for(lambda: all(_announcements(tmp_path).values()), timeout=30), _announcements(tmp_path)
    files = _announcements(tmp_path)
    gemini, claude, mcp = (read_json(files[k][0]) for k in ("gemini", "claude", "mcp"))
    # A live session on each bridge, as the agents hold them.
    clients = [
        HttpSession(gemini["port"], gemini["authToken"]),
        ClaudeSession(ports["claudeCode"], claude["authToken"]),
        HttpSession(mcp["port"], mcp["token"]),
    ]
    status = proc.command("contextCompanion.companionStatus")
    assert status["geminiCli"]["connectedClients"] == 1, status

    t0 = time.monotonic()
    if way_out == "exit":
        proc.request("shutdown")
        proc.notify("exit")
    elif way_out == "end-of-input":
        proc.close_stdin()
    else:
        proc.proc.send_signal(getattr(signal, way_out))
    code = proc.proc.wait(timeout=20)
    figures[f"way out {way_out}, every bridge on and connected → process exited (s)"] = round(time.monotonic() - t0, 2)
    for client in clients:
        client.close()

    log = proc.stderr_text()
    assert code == 0, log[-3000:]
    assert _announcements(tmp_path) == {"gemini": [], "claude": [], "mcp": []}
    for bad in ("ERROR", "Traceback", "Exception"):
        assert bad not in log, log[-4000:]
