"""The harness's fork server (tests/forkserver.py): a server forked from it answers, exits and
shows itself as the same server started with a real exec, and starts it cannot make alike are
real execs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import forkserver
import pytest

SERVER = [sys.executable, "-m", "context_companion", "serve"]


class Session:
    """A server process and a minimal LSP client over its stdin/stdout."""

    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.next_id = 0

    def send(self, method: str, params: Any = None, *, request: bool = True) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        msg_id = None
        if request:
            self.next_id += 1
            msg_id = message["id"] = self.next_id
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return msg_id

    def answer(self, msg_id: int | None) -> dict[str, Any]:
        while True:
            length = 0
            while (line := self.proc.stdout.readline().strip()) != b"":
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            message = json.loads(self.proc.stdout.read(length))
            if message.get("id") == msg_id and "method" not in message:
                return message

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if not stream.closed:
                stream.close()

    def request(self, method: str, params: Any = None) -> Any:
        return self.answer(self.send(method, params))

    def initialize(self, folder: Path) -> Any:
        result = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {},
                "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
            },
        )
        self.send("initialized", {}, request=False)
        return result


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Any]:
    """A workspace with memory, a user config folder with memory of its own, and a server environment
    that names them (the fork server was started with another)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Workspace rule: tabs.\n", encoding="utf-8")
    config = tmp_path / "config"
    config.mkdir()
    (config / "AGENTS.md").write_text("User rule: be brief.\n", encoding="utf-8")
    (tmp_path / "tmp").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(tmp_path), "CONTEXT_COMPANION_CONFIG_DIR": str(config), "TMPDIR": str(tmp_path / "tmp")})
    return {"ws": ws, "env": env, "cwd": tmp_path}


def start(project: dict[str, Any], fork: bool) -> Session:
    proc = forkserver.popen(
        SERVER,
        fork=fork,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=project["env"],
        cwd=project["cwd"],
    )
    assert isinstance(proc, forkserver.ForkedPopen) is fork
    return Session(proc)


def session_record(project: dict[str, Any], fork: bool) -> dict[str, Any]:
    """What a client sees of one session: initialize, the instruction, shutdown, the exit status."""
    s = start(project, fork)
    pid = s.proc.pid
    init = s.initialize(project["ws"])["result"]
    instruction = s.request("workspace/executeCommand", {"command": "contextCompanion.getSystemInstruction"})
    seen = {
        "cwd": os.readlink(f"/proc/{pid}/cwd"),
        "umask": _umask_of(pid),
        "init": init,
        "instruction": instruction["result"]["text"],
        "shutdown": s.request("shutdown"),
    }
    s.send("exit", request=False)
    seen["status"] = s.proc.wait(30)
    s.close()
    seen["shutdown"].pop("id")
    assert not os.path.exists(f"/proc/{pid}"), "the exited server was reaped"
    return seen


def _umask_of(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return line.split()[1]
    raise AssertionError("no Umask line")


def test_a_forked_server_answers_and_exits_as_an_execd_one(project):
    execd = session_record(project, fork=False)
    forked = session_record(project, fork=True)
    assert forked == execd
    assert "Workspace rule: tabs." in forked["instruction"] and "User rule: be brief." in forked["instruction"]
    assert forked["cwd"] == str(project["cwd"]) and forked["status"] == 0


@pytest.mark.parametrize("end", ["SIGTERM", "SIGKILL", "stdin closed", "exit without shutdown"])
def test_a_forked_server_ends_with_the_status_an_execd_one_ends_with(project, end):
    statuses = []
    for fork in (False, True):
        s = start(project, fork)
        s.initialize(project["ws"])
        if end == "stdin closed":
            s.proc.stdin.close()
        elif end == "exit without shutdown":
            s.send("exit", request=False)
        else:
            s.proc.send_signal(getattr(signal, end))
        statuses.append(s.proc.wait(30))
        s.close()
    assert statuses[1] == statuses[0]
    if end == "SIGKILL":
        assert statuses == [-signal.SIGKILL, -signal.SIGKILL]


async def test_pygls_clients_get_forked_servers_with_their_exit_status(project):
    forkserver.install()
    with forkserver.forked_asyncio_starts():
        proc = await asyncio.create_subprocess_exec(*SERVER, env=project["env"])
    try:
        assert isinstance(proc._transport._proc, forkserver.ForkedPopen)
        assert os.readlink(f"/proc/{proc.pid}/cwd") == os.getcwd()
        proc.stdin.close()
        assert await proc.wait() == 0
        assert proc.returncode == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize(
    ("argv", "env_change"),
    [
        ([sys.executable, "-c", "import sys; sys.exit(3)"], {}),
        ([sys.executable, "-m", "context_companion", "instruction", "--help"], {}),
        (SERVER, {"PYTHONPATH": "/nonexistent"}),
        (SERVER, {"PYTHONHASHSEED": "7"}),
    ],
    ids=["python -c", "another subcommand", "PYTHONPATH", "PYTHONHASHSEED"],
)
def test_what_a_fork_would_change_is_started_with_a_real_exec(project, argv, env_change):
    env = {**project["env"], **env_change}
    proc = forkserver.popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env)
    try:
        assert isinstance(proc, subprocess.Popen)
    finally:
        proc.kill()
        proc.wait(30)
