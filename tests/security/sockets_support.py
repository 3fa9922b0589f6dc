"""Servers on sockets, started as an editor would, and raw clients that play the attacker.

A module of its own name (not conftest) so test files can import its helpers whichever
conftest pytest imported first."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER = [sys.executable, "-m", "context_companion", "serve"]


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def initialize(msg_id: int = 1, token: str | None = None, folder: Path | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"processId": None, "capabilities": {}}
    if token is not None:
        params["initializationOptions"] = {"authToken": token}
    if folder is not None:
        params["workspaceFolders"] = [{"uri": folder.as_uri(), "name": folder.name}]
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize", "params": params}


def read_frames(sock: socket.socket, timeout: float = 20.0) -> tuple[list[dict[str, Any]], bool]:
    """Every message the server sends until it closes the connection (or ``timeout``):
    (messages, closed)."""
    sock.settimeout(timeout)
    data = b""
    closed = False
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        if not chunk:
            closed = True
            break
        data += chunk
    return parse_frames(data), closed


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise AssertionError(f"no Content-Length in {head!r}")


def parse_frames(data: bytes) -> list[dict[str, Any]]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = content_length(head)
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def read_one(sock: socket.socket, msg_id: int, timeout: float = 30.0) -> dict[str, Any]:
    """Read messages until the response to ``msg_id``."""
    sock.settimeout(timeout)
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        while b"\r\n\r\n" in buf:
            head, _, rest = buf.partition(b"\r\n\r\n")
            length = content_length(head)
            if len(rest) < length:
                break
            message, buf = json.loads(rest[:length]), rest[length:]
            if message.get("id") == msg_id and "method" not in message:
                return message
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before the answer to {msg_id}")
        buf += chunk
    raise AssertionError(f"no answer to {msg_id}")


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], runtime: Path, stderr_path: Path) -> None:
        self.proc = proc
        self.runtime = runtime
        self.stderr_path = stderr_path

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def discovery_files(self) -> list[Path]:
        folder = self.runtime / "context-companion"
        return sorted(folder.glob(f"server-{self.proc.pid}-*.json")) if folder.is_dir() else []

    def wait_discovery(self, timeout: float = 20.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            files = self.discovery_files()
            if files:
                try:
                    return json.loads(files[0].read_text())
                except ValueError:
                    pass
            assert self.proc.poll() is None, self.stderr
            time.sleep(0.05)
        raise AssertionError("no discovery file\n" + self.stderr)

    def wait_listening(self, port: int, timeout: float = 20.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for table in ("/proc/net/tcp", "/proc/net/tcp6"):
                with open(table) as fh:
                    if any(f":{port:04X} " in line and line.split()[3] == "0A" for line in fh):
                        return
            assert self.proc.poll() is None, self.stderr
            time.sleep(0.05)
        raise AssertionError(f"nothing listens on {port}")

    def connect(self, port: int) -> socket.socket:
        return socket.create_connection(("127.0.0.1", port), timeout=20)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    """A private XDG_RUNTIME_DIR (platformdirs only accepts one that is 0700)."""
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    os.chmod(d, 0o700)
    return d


@pytest.fixture
def server_env(tmp_path: Path, runtime: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "CONTEXT_COMPANION_CONFIG_DIR": str(tmp_path / "cfg"),
            "XDG_RUNTIME_DIR": str(runtime),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.fixture
def start(tmp_path: Path, runtime: Path, server_env: dict[str, str]) -> Iterator[Any]:
    started: list[subprocess.Popen[bytes]] = []

    def run(*args: str, env: dict[str, str] | None = None) -> Server:
        err = tmp_path / f"server-{len(started)}.stderr"
        proc = subprocess.Popen(
            [*SERVER, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err.open("wb"),
            env={**server_env, **(env or {})},
            cwd=tmp_path,
        )
        started.append(proc)
        return Server(proc, runtime, err)

    yield run
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


# ----------------------------------------------------------------------------- stdio sessions


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message"))
        self.code = error.get("code")
        self.message = error.get("message", "")


class StdioSession:
    """The real server on stdio, driven synchronously: requests, raw messages, notifications
    collected, stderr kept in a file (a chatty server never blocks)."""

    def __init__(self, env: dict[str, str], stderr_path: Path, cwd: Path) -> None:
        import threading

        self.stderr_path = stderr_path
        self._err = stderr_path.open("wb")
        self.proc = subprocess.Popen(
            SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, env=env, cwd=cwd
        )
        self.messages: list[dict[str, Any]] = []
        self.eof = False
        self._cond = threading.Condition()
        self._next = 100
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self.eof = True
                        self._cond.notify_all()
                    return
                if not line.strip():
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            message = json.loads(out.read(length or 0))
            if "method" in message and "id" in message:  # answer server→client requests
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            with self._cond:
                self.messages.append(message)
                self._cond.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def request_id(self, method: str, params: Any = None) -> int:
        self._next += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next

    def answer(self, msg_id: int, timeout: float = 30.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                for m in self.messages:
                    if m.get("id") == msg_id and "method" not in m:
                        return m
                remaining = end - time.monotonic()
                if remaining <= 0 or self.eof:
                    raise AssertionError(f"no answer to {msg_id}\n{self.stderr}")
                self._cond.wait(min(remaining, 0.1))

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        reply = self.answer(self.request_id(method, params), timeout)
        if "error" in reply:
            raise RpcFailure(reply["error"])
        return reply["result"]

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, folder: Path | None, settings: Any = None) -> Any:
        params: dict[str, Any] = {"processId": None, "capabilities": {}, "initializationOptions": settings}
        if folder is not None:
            params["workspaceFolders"] = [{"uri": folder.as_uri(), "name": folder.name}]
        result = self.request("initialize", params)
        self.notify("initialized", {})
        return result

    def command(self, name: str, arg: Any = None, timeout: float = 30.0) -> Any:
        args = [] if arg is None else [arg]
        return self.request("workspace/executeCommand", {"command": name, "arguments": args}, timeout)

    def notifications(self, method: str) -> list[Any]:
        with self._cond:
            return [m.get("params") for m in self.messages if m.get("method") == method and "id" not in m]

    def wait_notifications(self, method: str, count: int = 1, timeout: float = 15.0) -> list[Any]:
        end = time.monotonic() + timeout
        with self._cond:
            while len([1 for m in self.messages if m.get("method") == method]) < count:
                remaining = end - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"expected {count} {method}: {self.messages}")
                self._cond.wait(min(remaining, 0.1))
        return self.notifications(method)

    @property
    def stderr(self) -> str:
        self._err.flush()
        return self.stderr_path.read_text(errors="replace")

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait_exit(self, timeout: float = 20.0) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._err.close()


SHIMS = Path(__file__).parent / "shims"


def with_shims(env: dict[str, str], *names: str) -> dict[str, str]:
    """``env`` with ``shims/sitecustomize.py`` loaded in the server and the named shims on."""
    path = os.pathsep.join(p for p in (str(SHIMS), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "CC_TEST_SHIMS": ",".join(names)}


@pytest.fixture
def stdio(tmp_path: Path, server_env: dict[str, str]) -> Iterator[Any]:
    """``stdio(env=...)`` starts the server on stdio; every one started is killed at the end."""
    started: list[StdioSession] = []

    def run(env: dict[str, str] | None = None) -> StdioSession:
        session = StdioSession({**server_env, **(env or {})}, tmp_path / f"stdio-{len(started)}.stderr", cwd=tmp_path)
        started.append(session)
        return session

    yield run
    for session in started:
        session.stop()
