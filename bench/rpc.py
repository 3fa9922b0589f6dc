"""A small asyncio JSON-RPC 2.0 client for language servers over pipes (Content-Length framing).

Built for measuring: messages can be pre-encoded with :func:`frame` and written in one go
(:meth:`LspClient.write`), every received message is stamped with ``time.perf_counter()`` as it
is parsed, and every wait has a timeout. Server → client requests are answered at once
(``workspace/configuration`` with one ``None`` per item, everything else with ``null``) so a
server is never left waiting on us.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

__all__ = ["LspClient", "RpcError", "file_uri", "frame"]

HEADER_END = b"\r\n\r\n"


def frame(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def notification(method: str, params: Any) -> bytes:
    return frame({"jsonrpc": "2.0", "method": method, "params": params})


def file_uri(path: Path | str) -> str:
    return Path(path).resolve().as_uri()


class RpcError(Exception):
    def __init__(self, method: str, error: dict[str, Any]) -> None:
        self.code = error.get("code")
        self.message = str(error.get("message", ""))
        super().__init__(f"{method}: error {self.code}: {self.message}")


class ServerGone(Exception):
    """The server closed its stdout (exited) while we were waiting."""


class LspClient:
    """One language server child process and the JSON-RPC conversation with it."""

    def __init__(self, proc: asyncio.subprocess.Process, name: str, started: float) -> None:
        self.proc = proc
        self.name = name
        self.started = started  # perf_counter() just before the process was spawned
        self._next_id = 0
        self._pending: dict[int, tuple[str, asyncio.Future[tuple[float, Any]]]] = {}
        self._waiters: dict[str, list[asyncio.Queue[tuple[float, Any]]]] = defaultdict(list)
        self.notifications: deque[tuple[float, str, Any]] = deque(maxlen=1000)
        self.server_requests: list[str] = []
        self._closed = asyncio.get_running_loop().create_future()
        self._reader_task = asyncio.create_task(self._read_loop())

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def spawn(
        cls,
        argv: list[str],
        *,
        name: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        stderr_path: Path | None = None,
    ) -> LspClient:
        stderr: Any = asyncio.subprocess.DEVNULL
        fh = None
        if stderr_path is not None:
            stderr_path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(stderr_path, "ab")  # noqa: SIM115 (lives as long as the server process)
            stderr = fh
        started = time.perf_counter()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=env,
                limit=1 << 24,
            )
        finally:
            if fh is not None:
                fh.close()  # the child holds its own descriptor
        return cls(proc, name, started)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def close(self, timeout: float = 5.0) -> int | None:
        """shutdown + exit, then wait; kills the process if it does not end in ``timeout`` s."""
        try:
            if self.proc.returncode is None and not self._closed.done():
                try:
                    await self.request("shutdown", None, timeout=timeout)
                except (RpcError, ServerGone, asyncio.TimeoutError, ConnectionError):
                    pass
                self.notify("exit", None)
                try:
                    await asyncio.wait_for(self.drain(), timeout)
                except (asyncio.TimeoutError, ConnectionError):
                    pass
                try:
                    self.proc.stdin.close()  # type: ignore[union-attr]
                except (OSError, AttributeError):
                    pass
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except asyncio.TimeoutError:
                self.kill()
                await asyncio.wait_for(self.proc.wait(), timeout)
        finally:
            self.kill()
            self._reader_task.cancel()
            try:
                await self._reader_task
            except (asyncio.CancelledError, Exception):
                pass
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.returncode is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass

    # ------------------------------------------------------------------ sending

    def write(self, data: bytes) -> None:
        """Queue pre-encoded frames (see :func:`frame`); call :meth:`drain` to wait for the pipe."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def drain(self) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()

    def notify(self, method: str, params: Any) -> None:
        self.write(notification(method, params))

    def send_request(self, method: str, params: Any) -> asyncio.Future[tuple[float, Any]]:
        """Write a request; the future resolves to ``(perf_counter at receipt, result)``."""
        self._next_id += 1
        msg_id = self._next_id
        fut: asyncio.Future[tuple[float, Any]] = asyncio.get_running_loop().create_future()
        if self._closed.done():
            fut.set_exception(ServerGone(f"{self.name} exited before {method}"))
            return fut
        self._pending[msg_id] = (method, fut)
        self.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return fut

    async def request_timed(self, method: str, params: Any, timeout: float = 30.0) -> tuple[float, Any]:
        fut = self.send_request(method, params)
        await self.drain()
        return await asyncio.wait_for(fut, timeout)

    async def request(self, method: str, params: Any, timeout: float = 30.0) -> Any:
        return (await self.request_timed(method, params, timeout))[1]

    async def command(self, command: str, arg: Any = None, timeout: float = 30.0) -> Any:
        params: dict[str, Any] = {"command": command}
        params["arguments"] = [] if arg is None else [arg]
        return await self.request("workspace/executeCommand", params, timeout)

    # ------------------------------------------------------------------ receiving

    def subscribe(self, method: str) -> asyncio.Queue[tuple[float, Any]]:
        """A queue receiving ``(perf_counter at receipt, params)`` of every later ``method`` notification."""
        q: asyncio.Queue[tuple[float, Any]] = asyncio.Queue()
        self._waiters[method].append(q)
        return q

    def unsubscribe(self, method: str, q: asyncio.Queue[tuple[float, Any]]) -> None:
        if q in self._waiters.get(method, []):
            self._waiters[method].remove(q)

    async def _read_loop(self) -> None:
        reader = self.proc.stdout
        assert reader is not None
        try:
            while True:
                header = await reader.readuntil(HEADER_END)
                length = None
                for line in header.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length is None:
                    raise ValueError(f"{self.name}: frame without Content-Length: {header[:200]!r}")
                body = await reader.readexactly(length)
                now = time.perf_counter()
                self._dispatch(now, json.loads(body))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail_all(exc)
            return
        finally:
            if not self._closed.done():
                self._closed.set_result(None)
        self._fail_all(ServerGone(f"{self.name} closed its output (exit code {self.proc.returncode})"))

    def _fail_all(self, exc: Exception) -> None:
        for _method, fut in self._pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()

    def _dispatch(self, now: float, msg: dict[str, Any]) -> None:
        if "method" in msg:
            method = msg["method"]
            if "id" in msg:
                self.server_requests.append(method)
                result: Any = None
                if method == "workspace/configuration":
                    items = (msg.get("params") or {}).get("items") or []
                    result = [None] * len(items)
                self.write(frame({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
                return
            params = msg.get("params")
            self.notifications.append((now, method, params))
            for q in self._waiters.get(method, ()):
                q.put_nowait((now, params))
            return
        entry = self._pending.pop(msg.get("id"), None)  # type: ignore[arg-type]
        if entry is None:
            return
        method, fut = entry
        if fut.done():
            return
        if "error" in msg:
            fut.set_exception(RpcError(method, msg["error"]))
        else:
            fut.set_result((now, msg.get("result")))


def initialize_params(root: Path | None, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """initialize params of a plain editor client (utf-16, incremental sync, workspace folders)."""
    params: dict[str, Any] = {
        "processId": os.getpid(),
        "clientInfo": {"name": "context-companion-bench", "version": "1"},
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "workspace": {"workspaceFolders": True, "configuration": False},
            "textDocument": {"synchronization": {"didSave": True}},
            "window": {"workDoneProgress": False},
        },
        "rootUri": file_uri(root) if root is not None else None,
        "workspaceFolders": [{"uri": file_uri(root), "name": root.name}] if root is not None else None,
    }
    if options is not None:
        params["initializationOptions"] = options
    return params
