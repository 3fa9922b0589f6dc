"""A loopback HTTP endpoint for an ASGI app, served by uvicorn on the caller's asyncio loop.

Every request must carry ``Authorization: Bearer <token>`` (else 401) and a ``Host`` naming a
loopback address with the bound port (else 403: a web page cannot reach us through DNS
rebinding); a browser ``Origin`` other than loopback is refused too. Bound to 127.0.0.1 only.

One request needs no token: ``GET`` :data:`PROOF_PATH` ``?nonce=N`` answers ``{"proof": HMAC(token,
N)}`` (:mod:`..proofs`), so a client that found the endpoint in a discovery file (``mcp --attach``)
checks the server holds the token before it sends it: a file left by a killed server names a port
anyone may hold now.
Used by ``context-companion mcp --http``, the language server's MCP endpoint and the Gemini CLI
companion.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any, Literal

from .listener import Listener

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
CLOSE_WAIT_S = 5.0  # seconds the MCP sessions get to end before they are cancelled
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


PROOF_PATH = "/context-companion/proof"


def refusal(headers: dict[bytes, bytes], token: str, port: int, *, token_needed: bool = True) -> tuple[int, str] | None:
    """Why a request is refused (HTTP status, message), or None when it may pass."""
    host = headers.get(b"host", b"").decode("latin-1").lower()
    if host not in {f"{name}:{port}" for name in _LOOPBACK_NAMES}:
        return 403, "Host must name the loopback address and this port"
    origin = headers.get(b"origin")
    if origin is not None:
        allowed = {f"http://{name}:{port}".encode() for name in _LOOPBACK_NAMES}
        if origin.lower() not in allowed:
            return 403, "requests from web pages are not accepted"
    if not token_needed:
        return None
    auth = headers.get(b"authorization", b"").decode("latin-1")
    scheme, _, presented = auth.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), token.encode()):
        return 401, "missing or wrong bearer token"
    return None


class _Guard:
    """ASGI middleware: token, Host and Origin checks before the app sees a request."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token
        self.port = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            proving = scope.get("path") == PROOF_PATH and scope.get("method") == "GET"
            why = refusal(dict(scope.get("headers") or ()), self.token, self.port, token_needed=not proving)
            if why is None and proving:
                why = self._proof(scope)
            if why is not None:
                status, message = why
                await _json(send, status, {"proof": message} if status == 200 else {"error": message})
                return
        await self.app(scope, receive, send)

    def _proof(self, scope: Scope) -> tuple[int, str]:
        from urllib.parse import parse_qs

        from .. import proofs

        nonces = parse_qs(bytes(scope.get("query_string") or b"").decode("latin-1")).get("nonce", [])
        if len(nonces) != 1 or not proofs.valid_nonce(nonces[0]):
            return 400, "nonce: expected one nonce of 32 to 128 hexadecimal characters"
        return 200, proofs.proof(self.token, proofs.HTTP_SERVER, nonces[0])


async def _json(send: Send, status: int, payload: dict[str, str]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def proves_token(url: str, token: str, timeout: float = 2.0) -> bool:
    """Whether the endpoint serving ``url`` proves it holds ``token`` (:data:`PROOF_PATH`), asked without
    revealing it. Blocking; False for any failure (nothing listens, another program, a wrong proof)."""
    import urllib.request
    from urllib.parse import urlsplit

    from .. import proofs

    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return False  # our endpoints listen on loopback only: anything else is not ours to ask
    nonce = proofs.new_nonce()
    probe = f"{parts.scheme}://{parts.netloc}{PROOF_PATH}?nonce={nonce}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    try:
        with opener.open(probe, timeout=timeout) as response:
            answer = json.loads(response.read(4096))
    except (OSError, ValueError):
        return False
    return isinstance(answer, dict) and proofs.check(answer.get("proof"), token, proofs.HTTP_SERVER, nonce)


class SessionsTask:
    """An MCP session manager (``StreamableHTTPSessionManager.run()``) run in a task of its own.

    anyio requires a task group to be left by the task that entered it. Entered by whichever task
    started the Gemini companion and left by the one stopping it, it raised "Attempted to exit
    cancel scope in a different task" (and, never left, asyncio's shutdown logged the generator's
    tracebacks). Here one task enters it, waits to be told to stop, and leaves it.
    """

    def __init__(self, manager: Any) -> None:
        self._manager = manager
        self._running = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="mcp-sessions")
        running = asyncio.get_running_loop().create_task(self._running.wait())
        await asyncio.wait({self._task, running}, return_when=asyncio.FIRST_COMPLETED)
        running.cancel()
        if self._task.done():
            self._task.result()  # raises what stopped it
            raise RuntimeError("the MCP session manager stopped during start-up")

    async def _run(self) -> None:
        async with self._manager.run():
            self._running.set()
            await self._stop.wait()

    async def stop(self) -> None:
        """End every session and leave the task group (in its own task)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        done, _ = await asyncio.wait({task}, timeout=CLOSE_WAIT_S)
        if not done:
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled() and task.exception() is not None:
            log.warning("the MCP sessions ended with an error: %s", task.exception())


def _embedded_server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn without its signal handlers: the process hosting it owns SIGINT/SIGTERM."""
    import uvicorn

    class _EmbeddedServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return _EmbeddedServer(config)


class LocalHttpHost:
    """Serve ``app`` on 127.0.0.1:``port`` (0: a free port) behind the guard, on the running loop.

    ``sessions``: the app's MCP session manager, run by the host itself (uvicorn's lifespan is off
    then): started before the first request, and at :meth:`stop` ended *before* the HTTP server
    waits for its connections, so clients' open streams (a listening GET) close at once instead of
    holding up the shutdown until uvicorn cancels them with an error. Without it, ``lifespan="on"``
    lets uvicorn run the app's lifespan.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        port: int = 0,
        lifespan: Literal["on", "off"] = "on",
        sessions: Any = None,
    ) -> None:
        self.token = token
        self.port = port
        self._guard = _Guard(app, token)
        self._sessions = SessionsTask(sessions) if sessions is not None else None
        self._lifespan: Literal["on", "off"] = "off" if sessions is not None else lifespan
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._listener: Listener | None = None  # listen(): the port, until the first connection
        self._stopped = False

    async def run_sessions(self, manager: Any) -> bool:
        """Run an MCP session manager from now on, for an app built after :meth:`start` (its
        lifespan must be off); :meth:`stop` ends it before the HTTP server, as with ``sessions``.
        False (and nothing left running) when the host stopped meanwhile."""
        if self._sessions is not None:
            raise RuntimeError("this endpoint already runs an MCP session manager")
        if not self.serving():
            return False
        sessions = SessionsTask(manager)
        await sessions.start()
        if not self.serving():  # stopped while the sessions were starting
            await sessions.stop()
            return False
        self._sessions = sessions
        return True

    def serving(self) -> bool:
        """Started and not stopped."""
        return self._server is not None

    def url(self, path: str = "/mcp") -> str:
        return f"http://{LOOPBACK}:{self.port}{path}"

    async def start(self) -> int:
        """Bind and serve; returns the port once requests are accepted. A bind failure is OSError."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((LOOPBACK, self.port))
        except OSError:
            sock.close()
            raise
        self.port = self._guard.port = sock.getsockname()[1]
        await self._serve(sock)
        return self.port

    async def listen(self) -> int:
        """Bind and listen, returning the port at once; uvicorn is loaded (on a worker thread) and
        serves the socket from the first connection on, which waits in the backlog meanwhile. A
        bind failure is OSError; a failure to start serving later is logged and resets the
        waiting clients."""
        self.reserve()
        self.open()
        return self.port

    def reserve(self) -> int:
        """Bind without listening (see :meth:`.Listener.reserve`); returns the port. :meth:`open`
        listens. A bind failure is OSError."""
        if self._listener is None:
            listener = Listener(self.port)
            self.port = self._guard.port = listener.reserve()
            self._listener = listener
        return self.port

    def open(self) -> None:
        """Listen on the reserved port; served from the first connection on (as :meth:`listen`).
        Idempotent; nothing once stopped or serving."""
        listener = self._listener
        if listener is None or listener.listening or self._stopped:
            return
        listener.open()
        listener.on_first_connection(self._serve_when_connected)

    @property
    def listening(self) -> bool:
        """Connections are accepted (or queued until the server is loaded)."""
        return self._server is not None or (self._listener is not None and self._listener.listening)

    async def _serve_when_connected(self) -> None:
        await asyncio.to_thread(importlib.import_module, "uvicorn")
        sock = self._listener.take() if self._listener is not None else None
        if sock is None:  # stopped while uvicorn was loading
            return
        await self._serve(sock)

    async def _serve(self, sock: socket.socket) -> None:
        """Run the sessions (if any) and uvicorn on the bound socket until :meth:`stop`."""
        import uvicorn

        if self._sessions is not None:
            try:
                await self._sessions.start()
            except BaseException:
                sock.close()
                raise
        sock.setblocking(False)
        # log_config=None: uvicorn must not reconfigure the hosting process's logging.
        config = uvicorn.Config(
            self._guard,
            log_config=None,
            log_level="warning",
            lifespan=self._lifespan,
            access_log=False,
            timeout_graceful_shutdown=1,
            ws="none",  # the apps speak HTTP only: no WebSocket library loaded, upgrades refused
        )
        server = self._server = _embedded_server(config)
        task = self._task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if task.done():  # not self._task: a stop meanwhile clears it
                    task.result()  # raises what stopped it
                    raise OSError(f"the endpoint on port {self.port} stopped during start-up")
                await asyncio.sleep(0.005)
        except BaseException:  # a failed start, or the start-up cancelled: leave nothing running
            await asyncio.shield(self.stop())
            sock.close()  # uvicorn may never have taken it: waiting clients get a reset, not a hang
            raise
        if self._stopped:  # stop() came while uvicorn was starting (the lazy start): stop it now
            await self.stop()

    def request_stop(self) -> None:
        """Stop accepting requests and end :meth:`wait` (safe from a signal handler on the loop)."""
        if self._server is not None:
            self._server.should_exit = True

    async def wait(self) -> None:
        """Until the server stops (after :meth:`request_stop` or :meth:`stop`)."""
        if self._task is not None:
            await self._task

    async def stop(self) -> None:
        self._stopped = True
        listener, self._listener = self._listener, None
        if listener is not None:  # no connection yet, or uvicorn still loading: it serves nothing
            listener.close()
            await listener.wait()
        server, task = self._server, self._task
        self._server = self._task = None
        if server is not None:
            server.should_exit = True  # no new connections from the next tick on
        if self._sessions is not None:
            await self._sessions.stop()
        if server is None or task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), 3)
        except asyncio.TimeoutError:
            server.force_exit = True
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception:
            log.debug("endpoint stopped with an error", exc_info=True)
