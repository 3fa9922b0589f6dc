"""Claude Code's IDE integration: the editor's state for a Claude Code started in its terminal.

Claude Code looks for lock files ``<config>/ide/<port>.lock`` (``$CLAUDE_CONFIG_DIR`` or
``~/.claude``) holding ``{pid, workspaceFolders, ideName, transport: "ws", authToken}`` and
connects to ``ws://127.0.0.1:<port>`` with the token in ``x-claude-code-ide-authorization``
(``CLAUDE_CODE_SSE_PORT`` in the terminal's environment picks the port). Over that socket it
speaks MCP, one JSON-RPC message per text frame: it calls the editor-state tools below and
receives ``selection_changed`` notifications.

The MCP session is the official SDK's server (:mod:`.claude_code_mcp`, which frames messages
over the WebSocket: the SDK has no WebSocket server transport). Starting only binds the port: the
WebSocket library is loaded when a connection first waits on it, and the SDK when the first client
that passed the checks connects, both on a worker thread. Every handshake
must name a loopback ``Host`` with the port, carry no ``Origin`` outside ``server.allowedOrigins``
and present the token, or it is answered 403/401 and never upgraded. Files matching
``context.exclude`` never appear in a result or notification, and selected text is redacted like
the turn context.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import importlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..discovery import STAMP_KEY, PrivateFile, new_token, owner_stamp
from .announcements import claude_lock_dir
from .claude_code_state import BridgeState, DiffOutcome, EditorSource
from .listener import Listener

if TYPE_CHECKING:
    from .claude_code_mcp import ClaudeCodeMcp

__all__ = [
    "ClaudeCodeBridge",
    "DiffOutcome",
    "EditorSource",
    "LockFile",
    "terminal_env",
]

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
AUTH_HEADER = "x-claude-code-ide-authorization"
TERMINAL_ENV_PORT = "CLAUDE_CODE_SSE_PORT"
MAX_FRAME = 16 * 1024 * 1024  # a diff's new contents travel in one frame
_MCP_SIDE = f"{__package__}.claude_code_mcp"


def terminal_env(port: int) -> dict[str, str]:
    """What the editor's terminals need so a Claude Code started there connects to this port."""
    return {TERMINAL_ENV_PORT: str(port), "ENABLE_IDE_INTEGRATION": "true"}


class LockFile(PrivateFile):
    """``<port>.lock``: private (0600 in a 0700 directory), rewritten atomically, removed at the end."""

    def __init__(self, port: int, token: str, ide_name: str, directory: Path | None = None) -> None:
        self.port = port
        self.token = token
        self.ide_name = ide_name
        self.path = (directory if directory is not None else claude_lock_dir()) / f"{port}.lock"
        self._written = False

    def write(self, workspace_folders: list[str]) -> Path:
        payload = {
            "pid": os.getpid(),
            "workspaceFolders": workspace_folders,
            "ideName": self.ide_name,
            "transport": "ws",
            "authToken": self.token,
            # Which server wrote it: a later server removes it if this one died without doing so.
            STAMP_KEY: owner_stamp(),
        }
        return self._publish(payload)


class ClaudeCodeBridge:
    """A WebSocket MCP server on 127.0.0.1 describing one editor to Claude Code."""

    def __init__(self, source: EditorSource, *, allowed_origins: frozenset[str] = frozenset()) -> None:
        self.source = source
        self.token = new_token()
        self.port = 0
        self._origins = allowed_origins
        self._state = BridgeState()
        self._ws_server: Any = None
        self._listener: Listener | None = None
        self._stopped = False
        self._mcp: ClaudeCodeMcp | None = None  # the MCP side, once a client connected
        self._loading = asyncio.Lock()

    # ------------------------------------------------------------------ socket

    def refusal(self, headers: Any) -> tuple[int, str] | None:
        """(HTTP status, reason) refusing a handshake, or None to accept it."""
        hosts = [str(h).lower() for h in headers.get_all("Host")]  # repeated headers: refused
        if len(hosts) != 1 or hosts[0] not in (f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"):
            return 403, "Forbidden: the Host header must be 127.0.0.1 or localhost with the port\n"
        origins = headers.get_all("Origin")
        if origins and (len(origins) > 1 or origins[0].rstrip("/") not in self._origins):
            return 403, "Forbidden: this Origin is not in server.allowedOrigins\n"
        tokens = headers.get_all(AUTH_HEADER)
        presented = str(tokens[0]) if len(tokens) == 1 else ""
        if not hmac.compare_digest(presented.encode("utf-8"), self.token.encode("utf-8")):
            return 401, f"Unauthorized: {AUTH_HEADER} is missing or wrong\n"
        return None

    async def start(self, listen: bool = True) -> int:
        """Listen on a free loopback port; returns it. The WebSocket server (and, at the first
        client that passes the checks, the MCP side) is loaded when a connection first waits.
        With ``listen=False`` the port is only reserved until :meth:`open`."""
        listener = self._listener = Listener()
        self.port = listener.reserve()
        if listen:
            self.open()
        return self.port

    def open(self) -> None:
        """Listen on the reserved port (idempotent; nothing once stopped)."""
        listener = self._listener
        if listener is None or listener.listening or self._stopped:
            return
        listener.open()
        listener.on_first_connection(self._serve_when_connected)

    @property
    def listening(self) -> bool:
        return self._ws_server is not None or (self._listener is not None and self._listener.listening)

    async def _serve_when_connected(self) -> None:
        await asyncio.to_thread(importlib.import_module, "websockets.asyncio.server")
        from websockets.asyncio.server import serve

        sock = self._listener.take() if self._listener is not None else None
        if sock is None:  # stopped meanwhile
            return

        def process_request(connection: Any, request: Any) -> Any:
            refusal = self.refusal(request.headers)
            if refusal is None:
                return None
            log.warning("Claude Code integration: refused a handshake: %s", refusal[1].strip())
            return connection.respond(*refusal)

        try:
            self._ws_server = await serve(
                self._serve,
                sock=sock,
                process_request=process_request,
                subprotocols=["mcp"],  # type: ignore[list-item]
                max_size=MAX_FRAME,
            )
        except BaseException:
            sock.close()
            raise
        if self._stopped:  # stop() came while the server was starting
            await self.stop()

    async def stop(self) -> None:
        self._stopped = True
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            await listener.wait()
        server, self._ws_server = self._ws_server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)

    @property
    def wants_selection(self) -> bool:
        """A Claude Code is connected: cursor moves are followed (with none, a client that connects
        is told where the editor is then)."""
        return bool(self._state.connections)

    def connected_clients(self) -> int:
        """Claude Codes connected now (past the handshake's checks)."""
        return len(self._state.connections)

    async def mcp(self) -> ClaudeCodeMcp:
        """The MCP side, loaded (the SDK imported on a worker thread) the first time it is needed."""
        async with self._loading:
            if self._mcp is None:
                await asyncio.to_thread(importlib.import_module, _MCP_SIDE)
                from .claude_code_mcp import ClaudeCodeMcp

                self._mcp = ClaudeCodeMcp(self.source, self._state)
            return self._mcp

    async def _serve(self, websocket: Any) -> None:
        """A client passed the handshake's checks: its MCP session, until it leaves."""
        await (await self.mcp()).serve(websocket)

    async def selection_changed(self) -> None:
        """The cursor or selection moved (debounced by the caller): tell connected clients when
        what they would see differs from the last notification."""
        if self._mcp is not None:  # else nobody ever connected
            await self._mcp.selection_changed()
