"""A loopback port that is announced at once and served from its first connection on.

A port may also be reserved first (:meth:`Listener.reserve`: bound, its number known, not
listening) and opened when a client may come (:meth:`Listener.open`): an editor that has no
terminal open listens on nothing.

The bridges announce their port as they start (Gemini CLI's discovery file, Claude Code's lock
file, the terminals' environment), but most editors never see an agent connect. A
:class:`Listener` binds and listens at start, so the port is real and connections queue in the
kernel's backlog; the server library behind it (uvicorn, websockets, the MCP SDK: tens of MiB) is
loaded only when the first connection is waiting, then serves that socket, queued connection
included. Nothing is accepted or read before then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
BACKLOG = 100


class Listener:
    """A listening socket on 127.0.0.1 that starts its server when a connection first waits."""

    def __init__(self, port: int = 0) -> None:
        self._requested = port
        self.port = 0
        self._sock: socket.socket | None = None
        self._task: asyncio.Task[None] | None = None
        self._watching = False
        self._taken = False
        self._listening = False

    def bind(self) -> int:
        """Bind and listen; returns the port. A bind failure (port taken) raises ``OSError``."""
        self.reserve()
        self.open()
        return self.port

    def reserve(self) -> int:
        """Bind without listening; returns the port. The port is ours (its number can be announced
        to terminals) but nothing listens: no connection is queued, and no port scanner or editor's
        port forwarding sees it until :meth:`open`. A bind failure raises ``OSError``."""
        if self._sock is not None:
            return self.port
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((LOOPBACK, self._requested))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        return self.port

    def open(self) -> None:
        """Listen on the reserved port (idempotent)."""
        if self._sock is None:
            raise RuntimeError("reserve() first")
        if not self._listening:
            self._sock.listen(BACKLOG)
            self._listening = True

    @property
    def listening(self) -> bool:
        return self._listening and (self._sock is not None or self._taken)

    def on_first_connection(self, start: Callable[[], Awaitable[None]]) -> None:
        """When a connection first waits, run ``start()`` once, in a task of its own: it loads what
        it needs, :meth:`take` s the socket and serves it from then on."""
        sock = self._sock
        if sock is None or not self._listening:
            raise RuntimeError("bind() or open() first")
        loop = asyncio.get_running_loop()

        def ready() -> None:
            self._unwatch()
            if self._sock is not None and self._task is None:
                self._task = loop.create_task(self._start(start), name=f"serve-port-{self.port}")

        try:
            loop.add_reader(sock.fileno(), ready)
        except NotImplementedError:  # a loop that cannot watch sockets (Windows' proactor): serve now
            ready()
            return
        self._watching = True

    async def _start(self, start: Callable[[], Awaitable[None]]) -> None:
        try:
            await start()
        except asyncio.CancelledError:
            raise
        except Exception:
            # The waiting clients get a reset instead of a hang.
            log.exception("could not start serving 127.0.0.1:%d", self.port)
            self.close()

    def take(self) -> socket.socket | None:
        """The socket, handed over to the server that serves it from now on (None once closed)."""
        self._unwatch()
        sock, self._sock = self._sock, None
        self._taken = sock is not None
        return sock

    def _unwatch(self) -> None:
        if self._watching and self._sock is not None:
            with contextlib.suppress(ValueError, OSError, RuntimeError):
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
        self._watching = False

    async def wait(self) -> None:
        """Until a start in progress has taken the socket or given up (at once when none began).
        Once the socket is taken its server is the owner's to stop: the start may itself stop its
        owner on a failure, and must not then wait for itself."""
        task = self._task
        if task is not None and not task.done() and not self._taken:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(task)

    def close(self) -> None:
        """Stop watching and close the socket unless a server took it (idempotent)."""
        self._unwatch()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
