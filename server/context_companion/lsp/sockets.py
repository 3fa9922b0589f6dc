"""TCP and WebSocket transports that only talk to a client holding the server's token.

Any local process, and any web page through DNS rebinding, can open a loopback socket; the server
hands out workspace and global memory, so a socket must prove it belongs to the user:

* TCP: the first message must be ``initialize`` with ``initializationOptions.authToken``; anything
  else is answered with one error and the connection closed. Until then the connection is not the
  protocol's writer, so nothing else (notifications, logs) can reach it.
* WebSocket: the opening handshake must name a loopback ``Host``, carry no ``Origin`` outside
  ``server.allowedOrigins``, and present the token (``Authorization: Bearer`` or ``?token=``);
  otherwise it is answered 403/401 over plain HTTP and never upgraded.

A refused connection does not end the server: the editor can still connect. The first accepted
connection becomes the client; the server exits when it leaves.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hmac
import json
import logging
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..discovery import DiscoveryFile, remove_stale
from ..errors import ContextCompanionError
from ..ratelimit import Sparse
from .envelope import parse
from .framing import (
    MAX_BODY,
    ExitHere,
    FrameReader,
    MalformedFrame,
    forget_before_shutdown,
    on_exit_signals,
    quiet_shutdown_errors,
    read_message,
    run_frames,
)

log = logging.getLogger(__name__)

UNAUTHORIZED = -32001  # JSON-RPC's implementation-defined server error range
AUTH_TIMEOUT = 10.0  # seconds a connection may take to send its initialize
MAX_FIRST_MESSAGE = 4 * 1024 * 1024
MAX_UNAUTHENTICATED = 16  # connections that have not shown the token yet
MAX_UNAUTHENTICATED_BYTES = 8 * 1024 * 1024  # what all of them together may make the server hold
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@dataclass
class Auth:
    """What a socket client must show. ``token`` None means ``--no-auth``."""

    token: str | None
    allowed_origins: frozenset[str] = frozenset()
    extra_hosts: tuple[str, ...] = ()

    def token_ok(self, presented: object) -> bool:
        if self.token is None:
            return True
        if not isinstance(presented, str):
            return False
        return hmac.compare_digest(presented.encode("utf-8"), self.token.encode("utf-8"))


@dataclass
class _State:
    claimed: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: int = 0  # connections that have not authenticated yet
    held: int = 0  # bytes they made the server read, in all

    def taken(self) -> bool:
        return self.claimed


def read_token_file(path: str) -> str:
    try:
        token = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ContextCompanionError(f"--token-file {path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ContextCompanionError(f"--token-file {path}: cannot read: {exc}") from None
    if not token:
        raise ContextCompanionError(f"--token-file {path}: the file is empty")
    return token


# ---------------------------------------------------------------------------- folders for the discovery file


def _folders_of(server: Any) -> list[str]:
    from ..uris import uri_to_path

    try:
        workspace = server.workspace
    except RuntimeError:  # not initialized
        return []
    uris = list(workspace.folders.keys()) or ([workspace.root_uri] if workspace.root_uri else [])
    out = []
    for uri in uris:
        with contextlib.suppress(Exception):
            out.append(str(uri_to_path(uri)))
    return out


def _observer(server: Any, announce: DiscoveryFile | None) -> Callable[[Any], None]:
    """Rewrites the discovery file when the folders become known or change; removes it on shutdown."""

    def observe(message: Any) -> None:
        if announce is None:
            return
        method = getattr(message, "method", None)
        if method in ("initialize", "workspace/didChangeWorkspaceFolders"):
            try:
                announce.write(_folders_of(server))
            except OSError as exc:
                log.warning("cannot update the discovery file %s: %s", announce.path, exc)
        elif method == "shutdown":
            announce.remove()

    return observe


def _strip_token(data: dict[str, Any]) -> None:
    """The token is for the transport, not a setting: keep it out of settings validation."""
    params = data.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    if isinstance(options, dict):
        options.pop("authToken", None)


class _TokenStripped:
    """The protocol as the WebSocket loop reads through it: ``initialize``'s token (checked in the
    handshake) is taken out before the message is structured."""

    def __init__(self, exits: ExitHere) -> None:
        self._exits = exits

    def structure_message(self, data: Any) -> Any:
        if isinstance(data, dict) and data.get("method") == "initialize":
            _strip_token(data)
        return self._exits.structure_message(data)

    def refuse(self, msg_id: int | str | None, code: int, reason: str) -> Any:
        return self._exits.refuse(msg_id, code, reason)


# ---------------------------------------------------------------------------- TCP


def _error_frame(msg_id: Any, message: str) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": UNAUTHORIZED, "message": message}}).encode(
        "utf-8"
    )
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


_refusals = Sparse(log)  # a flood of connections must not fill the log


async def _refuse(writer: asyncio.StreamWriter, msg_id: Any, message: str, peer: Any) -> None:
    _refusals.warning("refused a TCP connection from %s: %s", peer, message)
    with contextlib.suppress(Exception):
        writer.write(_error_frame(msg_id, message))
        await asyncio.wait_for(writer.drain(), 2)
    writer.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(writer.wait_closed(), 2)


async def _first_message(frames: FrameReader, auth: Auth) -> tuple[dict[str, Any] | None, Any, str]:
    """(the initialize request, its id, "") when it authenticates, else (None, id, why)."""
    try:
        body = await asyncio.wait_for(frames.next_body(), AUTH_TIMEOUT)
    except asyncio.TimeoutError:
        return None, None, f"no initialize request within {AUTH_TIMEOUT:g} seconds"
    except MalformedFrame:
        # An HTTP request, a banner, any bytes that are not a header: refused now, not after the timeout.
        return None, None, "the first message must be an initialize request (got something that is not an LSP frame)"
    if body is None:
        return None, None, "closed before initialize"
    try:
        data = parse(body)  # an over-long integer id still gets its answer
    except (ValueError, RecursionError):
        return None, None, "the first message must be an initialize request (got something that is not JSON)"
    msg_id = data.get("id") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("method") != "initialize" or "id" not in data:
        return None, msg_id, "the first message must be an initialize request"
    params = data.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    presented = options.get("authToken") if isinstance(options, dict) else None
    if presented is None:
        return None, msg_id, "initializationOptions.authToken is missing (see the discovery file)"
    if not auth.token_ok(presented):
        return None, msg_id, "initializationOptions.authToken is wrong"
    return data, msg_id, ""


async def _tcp_main(
    server: Any,
    host: str,
    port: int,
    auth: Auth,
    announce_for: Callable[[int], DiscoveryFile | None],
    exits: ExitHere,
) -> None:
    state = _State()
    stop_event = exits.stop_event
    announce: DiscoveryFile | None = None

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        authenticating = auth.token is not None
        limited = _LimitedReader(reader, state)
        frames = FrameReader(limited if authenticating else reader, strict=authenticating)
        if state.claimed:
            await _refuse(writer, None, "the server already has a client", peer)
            return
        first = None
        if auth.token is not None:
            if state.waiting >= MAX_UNAUTHENTICATED:
                await _refuse(
                    writer, None, f"more than {MAX_UNAUTHENTICATED} connections are waiting to authenticate", peer
                )
                return
            state.waiting += 1
            try:
                data, msg_id, why = await _first_message(frames, auth)
            finally:
                state.waiting -= 1
                limited.release()
            if limited.over is not None:
                why = limited.over
            if data is None:
                await _refuse(writer, msg_id, why, peer)
                return
            if state.taken():  # another connection won while this one was authenticating
                await _refuse(writer, msg_id, "the server already has a client", peer)
                return
            _strip_token(data)
            first = exits.structure_message(data)
            frames.replace_source(reader)  # authenticated: no first-message size limit any more
            frames.strict = False  # and garbage is skipped, as over stdio
        state.claimed = True
        log.info("client connected from %s", peer)
        server.protocol.set_writer(writer)
        try:
            await run_frames(
                frames,
                exits,
                stop_event,
                error_handler=server.report_server_error,
                observe=_observer(server, announce),
                first=first,
            )
        finally:
            log.info("the client left: shutting down")
            state.done.set()

    tcp = await asyncio.start_server(on_connection, host, port)
    server._server = tcp
    bound = tcp.sockets[0].getsockname()[1]
    log.info("listening on %s:%s (TCP)", host, bound)
    announce = announce_for(bound)
    async with tcp:
        await state.done.wait()


class _LimitedReader:
    """Caps what an unauthenticated connection can make the server buffer: :data:`MAX_FIRST_MESSAGE`
    each, :data:`MAX_UNAUTHENTICATED_BYTES` for all of them together (``state.held``; given back by
    :meth:`release` once the connection authenticated or was refused)."""

    def __init__(self, reader: asyncio.StreamReader, state: _State) -> None:
        self._reader = reader
        self._state = state
        self._seen = 0
        self.over: str | None = None  # why the connection was cut off

    def _take(self, n: int) -> bool:
        if self._seen + n > MAX_FIRST_MESSAGE:
            self.over = f"the first message is larger than {MAX_FIRST_MESSAGE >> 20} MiB"
            return False
        if self._state.held + n > MAX_UNAUTHENTICATED_BYTES:
            self.over = f"the connections waiting to authenticate hold more than {MAX_UNAUTHENTICATED_BYTES >> 20} MiB"
            return False
        self._seen += n
        self._state.held += n
        return True

    def release(self) -> None:
        self._state.held -= self._seen
        self._seen = 0

    async def readline(self) -> bytes:
        line = await self._reader.readline()
        if not self._take(len(line)):
            return b""
        return line

    async def readexactly(self, n: int) -> bytes:
        if not self._take(n):
            raise asyncio.IncompleteReadError(b"", n)
        return await self._reader.readexactly(n)


# ---------------------------------------------------------------------------- WebSocket


def check_handshake(headers: Any, path: str, port: int, auth: Auth, claimed: bool) -> tuple[int, str] | None:
    """(HTTP status, reason) refusing a WebSocket handshake, or None to accept it."""
    if auth.token is None:
        return None
    host = str(headers.get("Host") or "").lower()
    hosts = {f"{name}:{port}" for name in (*LOOPBACK_NAMES, *auth.extra_hosts)}
    if host not in hosts:
        return 403, "Forbidden: the Host header must be 127.0.0.1, localhost or [::1] with the port\n"
    origin = headers.get("Origin")
    if origin is not None and origin.rstrip("/") not in auth.allowed_origins:
        return 403, "Forbidden: this Origin is not in server.allowedOrigins\n"
    presented: str | None = None
    authorization = str(headers.get("Authorization") or "")
    if authorization[:7].lower() == "bearer ":
        presented = authorization[7:].strip()
    else:
        values = parse_qs(urlsplit(path).query).get("token")
        presented = values[0] if values else None
    if not auth.token_ok(presented):
        return 401, "Unauthorized: a valid token is required (Authorization: Bearer <token> or ?token=)\n"
    if claimed:
        return 409, "Conflict: the server already has a client\n"
    return None


async def _ws_main(
    server: Any,
    host: str,
    port: int,
    auth: Auth,
    announce_for: Callable[[int], DiscoveryFile | None],
    exits: ExitHere,
) -> None:
    from websockets.asyncio.server import serve

    state = _State()
    bound_port = [port]
    announce: list[DiscoveryFile | None] = [None]

    def process_request(connection: Any, request: Any) -> Any:
        refusal = check_handshake(request.headers, request.path, bound_port[0], auth, state.claimed)
        if refusal is None:
            if auth.token is not None:
                state.claimed = True  # claimed at the handshake: a second one is refused with 409
            return None
        log.warning("refused a WebSocket handshake: %s", refusal[1].strip())
        return connection.respond(*refusal)

    async def on_connection(websocket: Any) -> None:
        if auth.token is None:
            if state.claimed:
                await websocket.close(1008, "the server already has a client")
                return
            state.claimed = True
        try:
            await _run_websocket(server, websocket, exits, _observer(server, announce[0]))
        finally:
            state.done.set()

    # The same message cap as TCP (websockets would close at 1 MiB: a didOpen of a larger file).
    ws = await serve(on_connection, host, port, process_request=process_request, max_size=MAX_BODY)
    server._server = ws
    bound_port[0] = ws.sockets[0].getsockname()[1] if ws.sockets else port
    log.info("listening on %s:%s (WebSocket)", host, bound_port[0])
    announce[0] = announce_for(bound_port[0])
    async with ws:
        await state.done.wait()


async def _run_websocket(server: Any, websocket: Any, exits: ExitHere, observe: Callable[[Any], None]) -> None:
    from pygls.exceptions import JsonRpcException
    from pygls.io_ import WebSocketWriter
    from websockets.exceptions import ConnectionClosed

    protocol = server.protocol
    protocol.set_writer(WebSocketWriter(websocket), include_headers=False)
    while not exits.stop_event.is_set():
        try:
            data = await websocket.recv(decode=False)
        except ConnectionClosed as exc:
            if exc.rcvd is not None and exc.rcvd.code != 1000:
                log.warning("WebSocket closed: %s %s", exc.rcvd.code, exc.rcvd.reason or "")
            elif exc.sent is not None and exc.sent.code != 1000:  # e.g. 1009: a message over the cap
                log.warning("WebSocket closed by the server: %s %s", exc.sent.code, exc.sent.reason or "")
            break
        try:
            message = read_message(data, _TokenStripped(exits))
        except ValueError as exc:
            log.warning("ignored a WebSocket message that is not JSON: %s", exc)
            continue
        forget_before_shutdown(message, observe)
        try:
            exits.handle_message(message)
        except Exception as exc:
            log.exception("unable to handle a message")
            server.report_server_error(exc, JsonRpcException)
        observe(message)
    with contextlib.suppress(Exception):
        await websocket.close()


# ---------------------------------------------------------------------------- running one


def serve_socket(
    server: Any,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    on_end: Callable[[Any], Awaitable[None]] | None = None,
) -> int:
    """Run ``server`` on a TCP or WebSocket listener until its client leaves, exits, or a signal;
    then ``on_end(server)`` is awaited on the loop (the server's bridges stop there). The exit
    status: 1 for ``exit`` without ``shutdown`` (as LSP says), else 0."""
    auth = Auth(token=token)
    if token is not None and transport == "ws":
        from ..settings import allowed_origins  # pydantic: only for a WebSocket with a token

        auth.allowed_origins = allowed_origins()
    if host not in ("0.0.0.0", "::", "", *LOOPBACK_NAMES, "::1"):
        auth.extra_hosts = (host if ":" not in host else f"[{host}]",)
    discovery: list[DiscoveryFile] = []
    server._stop_event = stop_event = threading.Event()
    exits = ExitHere(server.protocol, stop_event)

    def announce_for(bound: int) -> DiscoveryFile | None:
        if token is None:
            return None
        remove_stale()
        entry = DiscoveryFile(port=bound, transport=transport, token=token)
        try:
            entry.write([])
        except OSError as exc:
            log.warning("cannot write the discovery file %s: %s", entry.path, exc)
            return None
        discovery.append(entry)
        atexit.register(entry.remove)
        log.info("discovery file: %s", entry.path)
        return entry

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(quiet_shutdown_errors)
        task = asyncio.current_task()

        def on_signal(sig: signal.Signals) -> None:
            _remove_all(discovery)
            if task is not None:
                task.cancel()

        runner = _ws_main if transport == "ws" else _tcp_main
        with on_exit_signals(loop, on_signal):
            try:
                await runner(server, host, port, auth, announce_for, exits)
            finally:
                if on_end is not None:
                    try:
                        await on_end(server)
                    except Exception:
                        log.exception("closing the bridges failed")

    try:
        asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        log.info("stopped by a signal")
    finally:
        _remove_all(discovery)
        server.shutdown()
    return exits.status if exits.status is not None else 0


def _remove_all(entries: list[DiscoveryFile]) -> None:
    for entry in entries:
        entry.remove()


def warn_no_auth() -> None:
    sys.stderr.write(
        "context-companion: warning: --no-auth: any local process and any web page can use this server "
        "and read your memory files\n"
    )
