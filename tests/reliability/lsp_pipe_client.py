"""A small synchronous LSP client over the server's stdin/stdout pipes, for reliability tests.

pytest-lsp (tests/lsp/conftest.py) is the harness for async tests. This client is for what it
cannot do: hypothesis tests (synchronous) sharing one server process across many examples,
raw bytes on the wire, closing the server's stdin mid-request, a wrapper around the server
command, and reading the server's stderr (kept in a file, so a chatty server never blocks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import forkserver

SERVER = [sys.executable, "-m", "context_companion", "serve"]
CHANGED = "contextCompanion/systemInstructionChanged"


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Pending:
    """A request in flight."""

    def __init__(self, request_id: int, method: str) -> None:
        self.id = request_id
        self.method = method
        self._done = threading.Event()
        self.result: Any = None
        self.error: dict[str, Any] | None = None

    def _settle(self, message: dict[str, Any]) -> None:
        self.result = message.get("result")
        self.error = message.get("error")
        self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float = 15.0) -> Any:
        if not self._done.wait(timeout):
            raise TimeoutError(f"no answer to {self.method} (id {self.id}) within {timeout} s")
        if self.error is not None:
            raise RpcError(int(self.error.get("code", 0)), str(self.error.get("message", "")))
        return self.result


def server_env(home: Path, config_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test process environment without CONTEXT_COMPANION_* plus an isolated home and config dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update(
        {
            "HOME": str(home),
            "CONTEXT_COMPANION_CONFIG_DIR": str(config_dir),
            "CONTEXT_COMPANION_MEMORY__DEBOUNCE_MS": "50",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


class LspProcess:
    """The real server process; answers server→client requests; collects notifications."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        stderr_path: Path,
        argv: Sequence[str] = SERVER,
        cwd: Path | None = None,
        fork: bool = True,
    ) -> None:
        self.stderr_path = Path(stderr_path)
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 (closed when the client stops)
        # Forked from the pre-imported fork server where that is the same as an exec (tests/forkserver.py).
        self.proc: Any = forkserver.popen(
            list(argv),
            fork=fork,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=dict(env),
            cwd=cwd,
        )
        self.configuration: dict[str, Any] = {}  # answers to workspace/configuration, by section
        # How server→client requests are answered: "result" (above), "error", or "never".
        self.server_request_answers = "result"
        self.notifications: list[tuple[str, Any]] = []
        self.server_requests: list[tuple[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # every response, those to raw messages included
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._pending: dict[int, Pending] = {}
        self._next_id = 0
        self.closed = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="lsp-pipe-reader", daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ wire

    def write_bytes(self, data: bytes) -> None:
        with self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    @staticmethod
    def frame(message: Any) -> bytes:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def send(self, message: dict[str, Any]) -> None:
        self.write_bytes(self.frame({"jsonrpc": "2.0", **message}))

    def send_body(self, body: bytes) -> None:
        """One frame holding ``body`` as it is (any JSON, or none)."""
        self.write_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def responses_since(self, start: int) -> list[dict[str, Any]]:
        with self._cond:
            return list(self.responses[start:])

    def wait_responses(self, start: int, count: int = 1, timeout: float = 15.0) -> list[dict[str, Any]]:
        """The responses received after the first ``start`` ones, once there are ``count``."""
        if not self.wait_for(lambda: len(self.responses) - start >= count, timeout):
            raise AssertionError(f"expected {count} response(s), got {self.responses_since(start)}")
        return self.responses_since(start)

    def _read_loop(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is None:
                    continue
                body = out.read(length)
                if len(body) < length:
                    return
                self._dispatch(json.loads(body))
        finally:
            self.closed.set()
            with self._cond:
                self._cond.notify_all()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            method, params = message["method"], message.get("params")
            with self._cond:
                self.server_requests.append((method, params))
                self._cond.notify_all()
            result: Any = None
            if method == "workspace/configuration":
                result = [self.configuration.get(item.get("section", "")) for item in (params or {}).get("items", [])]
            answer: dict[str, Any] = {"id": message["id"], "result": result}
            if self.server_request_answers == "never":
                return
            if self.server_request_answers == "error":
                answer = {"id": message["id"], "error": {"code": -32603, "message": "the test client refuses"}}
            try:
                self.send(answer)
            except (BrokenPipeError, ValueError, OSError):
                pass
            return
        if "method" in message:
            with self._cond:
                self.notifications.append((message["method"], message.get("params")))
                self._cond.notify_all()
            return
        with self._cond:
            self.responses.append(message)
            self._cond.notify_all()
        msg_id = message.get("id")
        pending = self._pending.pop(msg_id, None) if isinstance(msg_id, (int, str)) else None
        if pending is not None:
            pending._settle(message)

    # ------------------------------------------------------------------ protocol

    def request_async(self, method: str, params: Any = None) -> Pending:
        with self._write_lock:
            self._next_id += 1
            request_id = self._next_id
        pending = self._pending[request_id] = Pending(request_id, method)
        message: dict[str, Any] = {"id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return pending

    def request(self, method: str, params: Any = None, timeout: float = 15.0) -> Any:
        return self.request_async(method, params).wait(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def command_async(self, name: str, *args: Any) -> Pending:
        return self.request_async("workspace/executeCommand", {"command": name, "arguments": list(args)})

    def command(self, name: str, *args: Any, timeout: float = 15.0) -> Any:
        return self.command_async(name, *args).wait(timeout)

    def initialize(
        self,
        folders: Sequence[Path],
        settings: Any = None,
        *,
        position_encodings: Sequence[str] | None = None,
        configuration: bool = False,
    ) -> Any:
        capabilities: dict[str, Any] = {
            "workspace": {"configuration": configuration, "workspaceFolders": True, "didChangeConfiguration": {}},
            "textDocument": {"synchronization": {"didSave": True}},
            "window": {"workDoneProgress": True},
        }
        if position_encodings is not None:
            capabilities["general"] = {"positionEncodings": list(position_encodings)}
        params = {
            "processId": os.getpid(),
            "rootUri": folders[0].as_uri() if folders else None,
            "capabilities": capabilities,
            "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
            "initializationOptions": settings,
        }
        result = self.request("initialize", params, timeout=30)
        self.notify("initialized", {})
        return result

    # ------------------------------------------------------------------ documents and cursor

    def open(self, uri: str, text: str, language: str = "plaintext", version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": language, "version": version, "text": text}},
        )

    def change(self, uri: str, version: int, changes: list[dict[str, Any]]) -> None:
        self.notify(
            "textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}
        )

    def close_document(self, uri: str) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def cursor(self, uri: str, line: int, character: int, selections: Sequence[tuple[int, int, int, int]] = ()) -> None:
        params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        if selections:
            params["selections"] = [
                {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}} for a, b, c, d in selections
            ]
        self.notify("contextCompanion/didChangeCursor", params)

    # ------------------------------------------------------------------ observing

    def notifications_of(self, method: str) -> list[Any]:
        with self._cond:
            return [p for m, p in self.notifications if m == method]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
        # The predicate runs without the lock: it may itself send a request and wait for the
        # reader thread, which takes the lock to record notifications.
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._cond:
                self._cond.wait(min(remaining, 0.05))
        return True

    def wait_notification(self, method: str, count: int = 1, timeout: float = 15.0) -> list[Any]:
        if not self.wait_for(lambda: len([1 for m, _ in self.notifications if m == method]) >= count, timeout):
            raise AssertionError(f"expected {count} {method} notification(s), got {self.notifications_of(method)}")
        return self.notifications_of(method)

    def stderr_text(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    # ------------------------------------------------------------------ ending

    def close_stdin(self) -> None:
        with self._write_lock:
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def stop(self, timeout: float = 10.0) -> int | None:
        """Polite shutdown (shutdown + exit), then kill if it does not go."""
        if self.alive():
            try:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit")
                self.close_stdin()
            except (OSError, ValueError, TimeoutError, RpcError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stderr.close()
        return self.proc.returncode

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
            self.proc.wait(5)
        self._stderr.close()
