"""Transports: stdio through an asyncio pipe reader, TCP and WebSocket bound to loopback by default.

pygls' stock stdio reader hops to a worker thread for every header line and body; reading the
pipe with asyncio instead keeps the whole message loop on the event loop thread (several times
the notification throughput, see docs/performance.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import Any

from pygls.io_ import run_async

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 2087


class _StdoutWriter:
    """Writes framed messages to stdout (blocking writes: stdout is a pipe the client drains)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()

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


def serve_stdio(server: Any) -> None:
    """Run ``server`` (a pygls LanguageServer) on stdin/stdout until EOF or ``exit``."""
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    # Anything else printing to fd 1 would corrupt the protocol: point sys.stdout at stderr.
    sys.stdout = sys.stderr
    server._stop_event = stop_event = threading.Event()
    server.protocol.set_writer(_StdoutWriter(stdout))

    async def main() -> None:
        reader = await _pipe_reader(stdin)
        if reader is None:
            from pygls.io_ import StdinAsyncReader

            reader = StdinAsyncReader(stdin, server.thread_pool)
        await run_async(
            stop_event=stop_event,
            reader=reader,
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )
        log.info("stdin closed: shutting down")

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the client closed the connection")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


def bind_host(host: str | None) -> str:
    """Loopback unless the user named an address."""
    return host or LOOPBACK


def serve_tcp(server: Any, host: str | None, port: int | None) -> None:
    server.start_tcp(bind_host(host), port or DEFAULT_PORT)


def serve_ws(server: Any, host: str | None, port: int | None) -> None:
    try:
        import websockets  # noqa: F401
    except ImportError:
        from ..errors import ContextCompanionError

        raise ContextCompanionError("--ws needs the websockets package: pip install 'context-companion[ws]'") from None
    server.start_ws(bind_host(host), port or DEFAULT_PORT)

