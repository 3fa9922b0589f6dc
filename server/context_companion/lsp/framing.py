"""LSP base-protocol framing that survives bad input.

pygls' loop only accepts ``Content-Length: N\\r\\n`` exactly; one lowercase header, an LF-only line
or a wrong length leaves it waiting for a header that never matches, and the connection is dead
without a word. Here header names are case-insensitive, LF line endings are accepted, and after
anything unreadable one warning is logged and reading resumes at the next ``Content-Length:``
header (also one found inside the garbage or inside a body that did not parse).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from pygls.exceptions import JsonRpcException

from ..heap import AfterBursts, resume_older_collections
from .envelope import PARSE_ERROR, parse, top_level_id

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024 * 1024
_HEADER_NAME = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_CONTENT_LENGTH = b"content-length:"
# The signals every transport ends on as at end of input. SIGHUP: the terminal the server was
# started from went away (none of these but SIGTERM/SIGINT exist on Windows).
EXIT_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def on_exit_signals(loop: asyncio.AbstractEventLoop, handler: Callable[[signal.Signals], None]) -> Iterator[None]:
    """``handler(sig)`` runs on the loop when one of :data:`EXIT_SIGNALS` arrives, while inside
    (Windows' loop takes no signal handlers: there the default handling stays)."""
    installed = []
    for sig in EXIT_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, handler, sig)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)


class AsyncLineReader(Protocol):
    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


class MalformedFrame(Exception):
    """What a strict :class:`FrameReader` raises at the first bytes that are not an LSP frame."""


class FrameReader:
    """Yields message bodies from a byte stream; resynchronises after garbage, or, ``strict``
    (a connection that has not authenticated yet), raises :class:`MalformedFrame` at once."""

    def __init__(
        self, reader: AsyncLineReader, max_body: int = MAX_BODY, logger: logging.Logger = log, *, strict: bool = False
    ) -> None:
        self._reader = reader
        self._pending = b""
        self._max_body = max_body
        self._log = logger
        self._complained = False  # one warning per run of bad input, not one per line
        self.skipped = 0  # bad frames seen (for tests and logs)
        self.strict = strict

    def replace_source(self, reader: AsyncLineReader) -> None:
        """Read on from ``reader`` (the same stream without a wrapper); buffered bytes are kept."""
        self._reader = reader

    # ------------------------------------------------------------------ reading

    async def _readline(self) -> bytes:
        if self._pending:
            cut = self._pending.find(b"\n")
            if cut >= 0:
                line, self._pending = self._pending[: cut + 1], self._pending[cut + 1 :]
                return line
            head, self._pending = self._pending, b""
            try:
                return head + await self._reader.readline()
            except ValueError:  # a line over the stream's limit: part of the garbage
                return head + b"\n"
        try:
            return await self._reader.readline()
        except ValueError:
            return b"<a line too long>\n"

    async def _readexactly(self, n: int) -> bytes | None:
        head, self._pending = self._pending[:n], self._pending[n:]
        if len(head) == n:
            return head
        try:
            rest = await self._reader.readexactly(n - len(head))
        except asyncio.IncompleteReadError as exc:
            # The stream ended inside the body: hand back what came, so a Content-Length that was
            # too long still lets the messages it swallowed be found.
            return (head + exc.partial) or None
        return (head + rest) or None  # pygls' threaded stdin reader returns short at EOF

    def _complain(self, what: str) -> None:
        if self.strict:
            raise MalformedFrame(what)
        self.skipped += 1
        if not self._complained:
            self._complained = True
            self._log.warning("malformed LSP frame (%s): skipping to the next Content-Length header", what)

    async def next_body(self) -> bytes | None:
        """The next message body, or None at the end of the stream."""
        length: int | None = None
        in_headers = False
        while True:
            line = await self._readline()
            if not line:
                return None
            text = line.rstrip(b"\r\n")
            if not text.strip():
                if length is not None:
                    body = await self._readexactly(length)
                    if body is None:
                        return None
                    return body
                if in_headers:
                    self._complain("a header block without Content-Length")
                in_headers = False
                continue
            name, sep, value = text.partition(b":")
            if sep and _HEADER_NAME.match(name.strip()):
                in_headers = True
                if name.strip().lower() == b"content-length":
                    length = self._parse_length(value)
                continue
            # Not a header: garbage, or the tail of a body whose Content-Length was too short,
            # possibly with the next message's header glued on.
            self._complain(f"{len(line)} bytes that are not a header")
            length, in_headers = None, False
            at = text.lower().find(_CONTENT_LENGTH, 1)
            if at > 0:
                self._pending = line[at:] + self._pending

    def _parse_length(self, value: bytes) -> int | None:
        raw = value.strip()
        if not raw.isdigit():
            self._complain(f"Content-Length {raw[:40]!r} is not a number")
            return None
        n = int(raw)
        if n > self._max_body:
            self._complain(f"Content-Length {n} is over the {self._max_body}-byte limit")
            return None
        return n

    def unreadable_body(self, body: bytes, error: Exception) -> None:
        """A body that is not JSON: log it and read its bytes again as lines. A wrong
        Content-Length may have swallowed the start (or only the first bytes) of the next
        message's header; scanning the body again finds it, and each pass consumes at least
        the header that announced this body, so the loop always moves on."""
        self._complain(f"a {len(body)}-byte body that is not JSON: {error}")
        self._pending = body + self._pending

    def good_frame(self) -> None:
        self._complained = False


def forget_before_shutdown(message: Any, observe: Callable[[Any], None] | None) -> None:
    """Show ``shutdown`` to the observer before the protocol answers it: a client that reads the
    answer may look at once for what shutdown removes (the discovery file)."""
    if observe is not None and getattr(message, "method", None) == "shutdown":
        observe(message)


def read_message(body: bytes | str, protocol: Any) -> Any:
    """The message in one frame's body, for ``protocol.handle_message``.

    Only the top level goes through ``protocol.structure_message`` (pygls' own readers pass every
    nested object through it as ``object_hook``: a ``params`` object holding a ``"jsonrpc"`` key
    was turned into a message). JSON nested deeper than Python's parser can go is answered
    ParseError (-32700), with the request's id when it can be read at the top level. Raises
    ValueError for a body that is not JSON (the frame reader then resynchronises)."""
    try:
        data = parse(body)
    except RecursionError:
        raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        return protocol.refuse(
            top_level_id(raw), PARSE_ERROR, f"a {len(raw)}-byte message nested too deeply to read (JSON depth limit)"
        )
    return protocol.structure_message(data)


class ExitHere:
    """The protocol as a transport's message loop sees it, except that ``exit`` ends the loop here.

    pygls answers ``exit`` with ``sys.exit`` from a callback inside the event loop; asyncio then
    tears the loop down with work still scheduled (it failed with "Event loop stopped before
    Future completed" when the editor closed stdin or the socket right after ``exit``). Instead the
    status is recorded (0 after ``shutdown``, else 1, as LSP says), reading stops, and the
    transport ends the way it does at end of input: the bridges stopped and awaited on a running
    loop. Every transport (stdio, TCP, WebSocket) reads through one."""

    def __init__(self, protocol: Any, stop_event: threading.Event) -> None:
        self._protocol = protocol
        self.stop_event = stop_event
        self.status: int | None = None

    def structure_message(self, data: Any) -> Any:
        return self._protocol.structure_message(data)

    def refuse(self, msg_id: int | str | None, code: int, reason: str) -> Any:
        return self._protocol.refuse(msg_id, code, reason)

    def handle_message(self, message: Any) -> None:
        if getattr(message, "method", None) == "exit" and not hasattr(message, "id"):
            self.status = 0 if getattr(self._protocol, "_shutdown", False) else 1
            log.info("exit: shutting down (status %d)", self.status)
            self.stop_event.set()
            return
        self._protocol.handle_message(message)


def quiet_shutdown_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler for the transports: when the client leaves mid-request (or a
    signal ends the server), pending handlers and connection tasks are cancelled and pygls'
    callbacks see CancelledError / BrokenPipeError: expected at exit, not worth a traceback."""
    exc = context.get("exception")
    if isinstance(exc, (asyncio.CancelledError, BrokenPipeError, ConnectionResetError)):
        log.debug("ignored at shutdown: %r", exc)
        return
    loop.default_exception_handler(context)


async def run_frames(
    frames: FrameReader,
    protocol: Any,
    stop_event: threading.Event,
    error_handler: Callable[[Exception, type[JsonRpcException]], Any] | None = None,
    observe: Callable[[Any], None] | None = None,
    first: Any = None,
) -> None:
    """The message loop: read frames, hand each parsed message to the pygls protocol.

    ``first`` is a message already parsed (the TCP transport reads the initialize request itself
    to check its token). ``observe`` sees each message after the protocol handled it.
    """
    message = first
    bursts = AfterBursts(asyncio.get_running_loop())  # the heap's free pages back after big input
    paused, took_one = True, first is not None  # the older generations' collections (heap.py)
    while True:
        if message is not None:
            forget_before_shutdown(message, observe)
            try:
                protocol.handle_message(message)
            except Exception as exc:
                log.exception("unable to handle a message")
                if error_handler is not None:
                    error_handler(exc, JsonRpcException)
            if observe is not None:
                observe(message)
            message = None
        if stop_event.is_set():
            return
        if paused and took_one:  # the first frame is dealt with (the initialize answer is out)
            paused = False
            resume_older_collections()
        body = await frames.next_body()
        if body is None:
            return
        took_one = True
        bursts.took(len(body))
        try:
            message = read_message(body, protocol)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            frames.unreadable_body(body, exc)
            continue
        except Exception as exc:
            log.warning("ignored a message that could not be read: %s", exc)
            continue
        frames.good_frame()
