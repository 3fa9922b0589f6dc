"""A local HTTP endpoint for an ASGI app, run on the caller's asyncio loop.

Every request must carry ``Authorization: Bearer <token>`` and a ``Host`` naming the loopback
address and the bound port (a web page cannot reach it through DNS rebinding); a browser
``Origin`` other than loopback is refused. Used by ``context-companion mcp --http``; built to be
hosted by any long-running process (the language server, for attach and IDE companions).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn

from ..errors import ContextCompanionError

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
Scope = dict[str, Any]


def new_token() -> str:
    return secrets.token_urlsafe(32)


class _Guard:
    """ASGI middleware: token, Host and Origin checks before the app sees a request."""

    def __init__(self, app: Any, host: LocalHttpHost) -> None:
        self._app = app
        self._host = host

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refusal = self._host.refusal(dict(scope.get("headers") or ()))
            if refusal is not None:
                status, message = refusal
                body = json.dumps({"error": message}).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                if status == 401:
                    headers.append((b"www-authenticate", b"Bearer"))
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process that hosts it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class LocalHttpHost:
    """Serves ``app`` on 127.0.0.1:``port`` (0: a free port) inside the running loop."""

    def __init__(self, app: Any, *, token: str, port: int = 0) -> None:
        self.token = token
        self.port = port
        self._app = _Guard(app, self)
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    def url(self, path: str = "/mcp") -> str:
        return f"http://{LOOPBACK}:{self.port}{path}"

    def refusal(self, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        """Why a request with these headers is refused (status, message), or None."""
        host = headers.get(b"host", b"").decode("latin-1")
        if host not in (f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"):
            return 403, f"Host {host!r} is not allowed"
        origin = headers.get(b"origin")
        if origin is not None:
            allowed = (f"http://{LOOPBACK}:{self.port}", f"http://localhost:{self.port}")
            if origin.decode("latin-1") not in allowed:
                return 403, "cross-origin requests are not allowed"
        expected = b"Bearer " + self.token.encode()
        if not hmac.compare_digest(headers.get(b"authorization", b""), expected):
            return 401, "missing or wrong bearer token"
        return None

    async def start(self) -> int:
        """Bind, start serving, and return the port once requests are accepted."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, self.port))
        except OSError as exc:
            sock.close()
            raise ContextCompanionError(f"--http {self.port}: cannot listen: {exc.strerror or exc}") from None
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self._app, log_level="warning", lifespan="on", access_log=False)
        server = _EmbeddedServer(config)
        self._server = server
        self._task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise ContextCompanionError("the HTTP endpoint stopped while starting")
            await asyncio.sleep(0.005)
        return self.port

    def request_stop(self) -> None:
        """Stop accepting requests and end :meth:`wait` (safe from a signal handler on the loop)."""
        if self._server is not None:
            self._server.should_exit = True

    async def wait(self) -> None:
        """Until the server stops (after :meth:`request_stop` or :meth:`stop`)."""
        if self._task is not None:
            await self._task

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._task, 5)
        self._server = self._task = None
