"""Every way out of a server with every bridge on and a client connected to each: ``exit`` (after
``shutdown``), end of input (the editor closed our stdin, crashed or was killed; over TCP: the
client left), SIGTERM, SIGINT; over stdio and over ``--tcp``. Each must stop the Gemini CLI companion, the Claude Code endpoint and the MCP endpoint in
order: exit status 0, every announcement file removed, and nothing at ERROR (no traceback) in
the log, with the default log settings."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from bridge_clients import ClaudeSession, HttpSession, read_json
from lsp_pipe_client import SERVER, server_env

STARTED = "contextCompanion/companionStarted"
ALL_BRIDGES = {"companion": {"geminiCli": {"enabled": True}, "claudeCode": {"enabled": True}}}


def _dirs(tmp_path: Path) -> dict[str, str]:
    for d in ("tmp", "claude", "run"):
        (tmp_path / d).mkdir(mode=0o700)  # platformdirs ignores a loose XDG_RUNTIME_DIR
    return {
        "TMPDIR": str(tmp_path / "tmp"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("# Project\n\nUse tabs.\n", encoding="utf-8")
    return ws


def _announcements(tmp_path: Path) -> dict[str, list[Path]]:
    return {
        "gemini": sorted((tmp_path / "tmp" / "gemini" / "ide").glob("*.json")),
        "claude": sorted((tmp_path / "claude" / "ide").glob("*.lock")),
        "mcp": sorted((tmp_path / "run" / "context-companion").glob("server-*.json")),
    }


def _connect_every_bridge(tmp_path: Path, claude_port: int) -> list[Any]:
    """A live session on each bridge, as the agents hold them."""
    files = _announcements(tmp_path)
    gemini, claude = read_json(files["gemini"][0]), read_json(files["claude"][0])
    mcp = next(read_json(p) for p in files["mcp"] if read_json(p)["transport"] == "mcp-http")
    return [
        HttpSession(gemini["port"], gemini["authToken"]),
        ClaudeSession(claude_port, claude["authToken"]),
        HttpSession(mcp["port"], mcp["token"]),
    ]


def _assert_clean(code: int, log: str, tmp_path: Path) -> None:
    assert code == 0, log[-3000:]
    assert _announcements(tmp_path) == {"gemini": [], "claude": [], "mcp": []}
    for bad in ("ERROR", "Traceback", "Exception"):
        assert bad not in log, log[-4000:]


@pytest.mark.parametrize("way_out", ["exit", "end-of-input", "SIGTERM", "SIGINT", "SIGHUP"])
def test_every_way_out_stops_every_bridge_cleanly(spawn, tmp_path, way_out, figures):
    ws = _workspace(tmp_path)
    env = _dirs(tmp_path)
    proc = spawn([ws], ALL_BRIDGES, env=env, argv=[*SERVER, "--mcp-endpoint"])
    started = proc.wait_notification(STARTED, 2, timeout=30)
    ports = {k: v["port"] for note in started for k, v in note.items() if v}
    assert set(ports) == {"geminiCli", "claudeCode"}, started
    assert proc.wait_for(lambda: all(_announcements(tmp_path).values()), timeout=30), _announcements(tmp_path)
    clients = _connect_every_bridge(tmp_path, ports["claudeCode"])
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

    _assert_clean(code, proc.stderr_text(), tmp_path)


class _TcpClient:
    """The editor over ``serve --tcp``: the token from the discovery file, LSP frames on a socket."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.file = self.sock.makefile("rwb")

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.file.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.file.flush()

    def receive(self) -> dict[str, Any]:
        length = 0
        while line := self.file.readline().strip():
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message: dict[str, Any] = json.loads(self.file.read(length))
        return message

    def until(self, predicate: Any) -> list[dict[str, Any]]:
        seen = []
        while not seen or not predicate(seen[-1]):
            seen.append(self.receive())
        return seen

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.mark.parametrize("way_out", ["exit", "client-left", "SIGTERM", "SIGINT", "SIGHUP"])
def test_every_way_out_of_a_tcp_server_stops_every_bridge_cleanly(tmp_path, way_out, figures):
    ws = _workspace(tmp_path)
    env = server_env(tmp_path / "home", tmp_path / "config", _dirs(tmp_path))
    (tmp_path / "home").mkdir(exist_ok=True)
    with open(tmp_path / "server.stderr", "wb") as stderr:
        server = subprocess.Popen(
            [*SERVER, "--tcp", "--port", "0", "--mcp-endpoint"], env=env, stderr=stderr, stdin=subprocess.DEVNULL
        )
    try:
        runtime = tmp_path / "run" / "context-companion"
        deadline = time.monotonic() + 30
        while not [p for p in runtime.glob("server-*.json") if read_json(p)["transport"] == "tcp"]:
            assert time.monotonic() < deadline and server.poll() is None, "no discovery file for --tcp"
            time.sleep(0.05)
        (entry,) = [read_json(p) for p in runtime.glob("server-*.json") if read_json(p)["transport"] == "tcp"]
        editor = _TcpClient(entry["port"])
        options = {"authToken": entry["token"], **ALL_BRIDGES}
        folders = [{"uri": ws.as_uri(), "name": "ws"}]
        editor.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "capabilities": {},
                    "workspaceFolders": folders,
                    "initializationOptions": options,
                },
            }
        )
        editor.until(lambda m: m.get("id") == 1)
        editor.send({"method": "initialized", "params": {}})
        started: list[dict[str, Any]] = []
        while len(started) < 2:
            message = editor.receive()
            if message.get("method") == STARTED:
                started.append(message["params"])
        ports = {k: v["port"] for note in started for k, v in note.items() if v}
        deadline = time.monotonic() + 30
        while not all(_announcements(tmp_path).values()):
            assert time.monotonic() < deadline, _announcements(tmp_path)
            time.sleep(0.05)
        clients = _connect_every_bridge(tmp_path, ports["claudeCode"])

        t0 = time.monotonic()
        if way_out == "exit":
            editor.send({"id": 2, "method": "shutdown"})
            editor.until(lambda m: m.get("id") == 2)
            editor.send({"method": "exit"})
        elif way_out == "client-left":
            editor.close()
        else:
            server.send_signal(getattr(signal, way_out))
        code = server.wait(timeout=20)
        figures[f"tcp: way out {way_out}, every bridge on and connected → process exited (s)"] = round(
            time.monotonic() - t0, 2
        )
        for client in clients:
            client.close()
        editor.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(5)
    _assert_clean(code, (tmp_path / "server.stderr").read_text(encoding="utf-8", errors="replace"), tmp_path)


@pytest.mark.parametrize("delay", [0.0, 0.3, 0.6, 1.0])
def test_the_editor_leaving_during_start_up_leaves_nothing_behind(spawn, tmp_path, delay):
    """End of input while the server is still loading and starting its bridges (the editor quit
    right after opening): the start-up is cancelled, whatever bridge already started is stopped."""
    ws = _workspace(tmp_path)
    proc = spawn([ws], ALL_BRIDGES, env=_dirs(tmp_path), argv=[*SERVER, "--mcp-endpoint"])
    time.sleep(delay)  # somewhere in the start-up: importing, loading memory, starting bridges
    proc.close_stdin()
    _assert_clean(proc.proc.wait(timeout=20), proc.stderr_text(), tmp_path)
