"""Transports: stdio through an asyncio pipe reader, TCP and WebSocket bound to loopback by default
and authenticated (see :mod:`.sockets`).

pygls' stock stdio reader hops to a worker thread for every header line and body; reading the
pipe with asyncio instead keeps the whole message loop on the event loop thread (several times
the notification throughput, see docs/performance.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from .framing import AsyncLineReader, ExitHere, FrameReader, on_exit_signals, quiet_shutdown_errors, run_frames

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 2087


class _StdoutWriter:
    """Writes framed messages to stdout (blocking writes: stdout is a pipe the client drains).

    When the client has gone (broken pipe), further writes are dropped and the message loop is
    told to stop, instead of a traceback per message.
    """

    def __init__(self, stream: Any, on_lost: Any = None) -> None:
        self._stream = stream
        self._lost = False
        self._on_lost = on_lost

    def write(self, data: bytes) -> None:
        if self._lost:
            return
        try:
            self._stream.write(data)
            self._stream.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError) as exc:
            self._lost = True
            log.info("the client is gone (%s): stopping", type(exc).__name__)
            if self._on_lost is not None:
                self._on_lost()

    def close(self) -> None:
        try:
            self._stream.close()
        except OSError:
            pass


async def _pipe_reader(stdin: Any) -> asyncio.StreamReader | None:
    """An asyncio reader for stdin when it is a pipe or socket (what editors give us), else None.

    epoll cannot watch regular files or character devices (``< /dev/null``, a file, some
    terminals): those are read by pygls' threaded reader instead.
    """
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError) as exc:
        log.info("stdin cannot be read asynchronously (%s); using the threaded reader", exc)
        return None
    return reader


def serve_stdio(server: Any, on_end: Callable[[Any], Awaitable[None]] | None = None) -> int:
    """Run ``server`` (a pygls LanguageServer) on stdin/stdout until ``exit``, end of input,
    SIGTERM or SIGINT; the exit status: 1 for ``exit`` without ``shutdown`` (as LSP says), else 0.

    Every way out ends the same way: ``on_end(server)`` is awaited on the running loop (the
    server's bridges stop there), then the loop ends with nothing left running."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    # Anything else printing to fd 1 would corrupt the protocol: point sys.stdout at stderr.
    sys.stdout = sys.stderr
    server._stop_event = stop_event = threading.Event()
    server.protocol.set_writer(_StdoutWriter(stdout, on_lost=stop_event.set))
    protocol = ExitHere(server.protocol, stop_event)

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(quiet_shutdown_errors)
        reader: AsyncLineReader | None = await _pipe_reader(stdin)
        if reader is None:
            from pygls.io_ import StdinAsyncReader

            reader = StdinAsyncReader(stdin, server.thread_pool)
        loop = asyncio.get_running_loop()
        reading = loop.create_task(
            run_frames(FrameReader(reader), protocol, stop_event, error_handler=server.report_server_error)
        )

        def on_signal(sig: signal.Signals) -> None:
            log.info("%s: shutting down", sig.name)
            stop_event.set()
            reading.cancel()

        with on_exit_signals(loop, on_signal):
            try:
                await reading
                if protocol.status is None:
                    log.info("stdin closed: shutting down")
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():  # type: ignore[union-attr]
                    raise  # main itself was cancelled, not just the reading
            if on_end is not None:
                try:
                    await on_end(server)
                except Exception:
                    log.exception("closing the bridges failed")

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the client closed the connection")
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return protocol.status if protocol.status is not None else 0


def bind_host(host: str | None) -> str:
    """Loopback unless the user named an address."""
    return host or LOOPBACK


def serve_tcp(
    server: Any,
    host: str | None,
    port: int | None,
    token: str | None,
    on_end: Callable[[Any], Awaitable[None]] | None = None,
) -> int:
    from .sockets import serve_socket

    return serve_socket(server, "tcp", bind_host(host), DEFAULT_PORT if port is None else port, token, on_end)


def serve_ws(
    server: Any,
    host: str | None,
    port: int | None,
    token: str | None,
    on_end: Callable[[Any], Awaitable[None]] | None = None,
) -> int:
    try:
        import websockets  # noqa: F401
    except ImportError:
        from ..errors import ContextCompanionError

        raise ContextCompanionError("--ws needs the websockets package: pip install 'context-companion[ws]'") from None
    from .sockets import serve_socket

    return serve_socket(server, "ws", bind_host(host), DEFAULT_PORT if port is None else port, token, on_end)
