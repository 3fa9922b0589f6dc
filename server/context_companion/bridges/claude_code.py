"""Claude Code's IDE integration: the editor's state for a Claude Code started in its terminal.

Claude Code looks for lock files ``<config>/ide/<port>.lock`` (``$CLAUDE_CONFIG_DIR`` or
``~/.claude``) holding ``{pid, workspaceFolders, ideName, transport: "ws", authToken}`` and
connects to ``ws://127.0.0.1:<port>`` with the token in ``x-claude-code-ide-authorization``
(``CLAUDE_CODE_SSE_PORT`` in the terminal's environment picks the port). Over that socket it
speaks MCP, one JSON-RPC message per text frame: it calls the editor-state tools below and
receives ``selection_changed`` notifications.

The MCP session is the official SDK's server; this module only frames messages over the
WebSocket (the SDK has no WebSocket server transport). Every handshake must name a loopback
``Host`` with the port, carry no ``Origin`` outside ``server.allowedOrigins`` and present the
token, or it is answered 403/401 and never upgraded. Files matching ``context.exclude`` never
appear in a result or notification, and selected text is redacted like the turn context.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ConfigDict

from .. import __version__
from ..context.positions import split_lines, units_from_column
from ..context.state import EditorSelection, uri_to_path
from ..discovery import STAMP_KEY, new_token, owner_stamp, write_private
from ..errors import ContextCompanionError
from ..workspace.companion import Companion
from ..workspace.params import parse_object
from .announcements import claude_lock_dir

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
AUTH_HEADER = "x-claude-code-ide-authorization"
SELECTION_CHANGED = "selection_changed"
TERMINAL_ENV_PORT = "CLAUDE_CODE_SSE_PORT"
MAX_FRAME = 16 * 1024 * 1024  # a diff's new contents travel in one frame
# Claude Code subscribes to selection_changed only once it has connected and listed the tools (a UI
# update with no message to say so; a notification before it is dropped): the editor's state is told
# again this many seconds after the client's tools/list, so a selection made before Claude Code
# started reaches its first prompt.
RETELL_AFTER = (0.1, 0.5, 2.0)
SEVERITY = {"error": "Error", "warning": "Warning", "information": "Information", "hint": "Hint"}


def lock_dir() -> Path:
    """Where Claude Code looks for lock files: ``$CLAUDE_CONFIG_DIR/ide``, else ``~/.claude/ide``."""
    return claude_lock_dir()


def terminal_env(port: int) -> dict[str, str]:
    """What the editor's terminals need so a Claude Code started there connects to this port."""
    return {TERMINAL_ENV_PORT: str(port), "ENABLE_IDE_INTEGRATION": "true"}


class LockFile:
    """``<port>.lock``: private (0600 in a 0700 directory), rewritten atomically."""

    def __init__(self, port: int, token: str, ide_name: str, directory: Path | None = None) -> None:
        self.port = port
        self.token = token
        self.ide_name = ide_name
        self.path = (directory if directory is not None else lock_dir()) / f"{port}.lock"
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
        write_private(self.path, json.dumps(payload, indent=2).encode("utf-8") + b"\n")
        self._written = True
        return self.path

    def remove(self) -> None:
        """Idempotent; safe from a signal handler and atexit."""
        if self._written:
            self._written = False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


# ---------------------------------------------------------------------------- what the bridge reads


DiffOutcome = Literal["accepted", "rejected", "closed"]


class EditorSource(Protocol):
    """The editor the bridge describes (the language server's live state)."""

    async def ready(self) -> Companion: ...

    def texts(self) -> Mapping[str, str]:
        """URI → text of the documents the editor has open."""
        ...

    def language_id(self, uri: str) -> str | None: ...

    async def show_diff(self, uri: str, new_text: str, title: str) -> tuple[DiffOutcome, str | None]:
        """Show ``new_text`` against ``uri``; the user's decision and the view's final text.
        Raises ``ContextCompanionError`` when the editor cannot show diffs."""
        ...


# ---------------------------------------------------------------------------- tool arguments


class _Args(BaseModel):
    model_config = ConfigDict(extra="ignore")  # Claude Code may send fields newer than this list


class NoArgs(_Args):
    pass


class DiagnosticsArgs(_Args):
    uri: str | None = None


class OpenDiffArgs(_Args):
    old_file_path: str
    new_file_path: str
    new_file_contents: str
    tab_name: str = "Proposed changes"


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str
    args: type[_Args]


TOOLS: tuple[_Tool, ...] = (
    _Tool("getCurrentSelection", "The selection (or cursor) in the active editor, with its file.", NoArgs),
    _Tool(
        "getLatestSelection",
        "The most recent selection that selected text, even if another editor is active now.",
        NoArgs,
    ),
    _Tool("getOpenEditors", "The documents open in the editor, the active one marked.", NoArgs),
    _Tool("getWorkspaceFolders", "The editor's workspace folders.", NoArgs),
    _Tool(
        "getDiagnostics",
        "Problems in the open memory and rule files (AGENTS.md, CLAUDE.md, rules): broken imports, bad "
        "frontmatter. Pass uri for one file.",
        DiagnosticsArgs,
    ),
    _Tool(
        "openDiff",
        "Show a proposed new content of a file as a diff in the editor and wait for the user: FILE_SAVED and "
        "the accepted text, or DIFF_REJECTED. The file itself is not written.",
        OpenDiffArgs,
    ),
)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def _json_result(value: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(value, ensure_ascii=False))])


def _texts_result(*texts: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=t) for t in texts], is_error=error)


def selection_params(sel: EditorSelection) -> dict[str, Any]:
    """The ``selection_changed`` params (and the selection tools' fields) for a selection."""
    url = sel.uri if sel.uri.startswith("file:") else Path(sel.path).as_uri() if sel.path.startswith("/") else sel.uri
    return {
        "text": sel.text,
        "filePath": sel.path,
        "fileUrl": url,
        "selection": {
            "start": {"line": sel.start[0], "character": sel.start[1]},
            "end": {"line": sel.end[0], "character": sel.end[1]},
            "isEmpty": sel.is_empty,
        },
    }


# ---------------------------------------------------------------------------- the bridge


@dataclass(eq=False)
class _Connection:
    write: Any  # the SDK session's write stream
    initialized: bool = False
    retelling: bool = False  # the state is told again after the client's first tools/list


@dataclass
class _State:
    last_sent: dict[str, Any] | None = None
    latest: dict[str, Any] | None = None  # the last selection that selected text
    connections: set[_Connection] = field(default_factory=set)


class ClaudeCodeBridge:
    """A WebSocket MCP server on 127.0.0.1 describing one editor to Claude Code."""

    def __init__(self, source: EditorSource, *, allowed_origins: frozenset[str] = frozenset()) -> None:
        self.source = source
        self.token = new_token()
        self.port = 0
        self._origins = allowed_origins
        self._state = _State()
        self._ws_server: Any = None
        self._tools = {tool.name: tool for tool in TOOLS}
        self.server: Server[Any] = Server(
            "context-companion",
            version=__version__,
            title="Context Companion (IDE)",
            instructions="The editor's state: selection, open editors, workspace folders, memory-file "
            "diagnostics; openDiff shows a proposed change for the user to accept or reject.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

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

    async def start(self) -> int:
        """Listen on a free loopback port; returns it."""
        from websockets.asyncio.server import serve

        def process_request(connection: Any, request: Any) -> Any:
            refusal = self.refusal(request.headers)
            if refusal is None:
                return None
            log.warning("Claude Code integration: refused a handshake: %s", refusal[1].strip())
            return connection.respond(*refusal)

        self._ws_server = await serve(
            self._serve,
            LOOPBACK,
            0,
            process_request=process_request,
            subprotocols=["mcp"],  # type: ignore[list-item]
            max_size=MAX_FRAME,
        )
        self.port = self._ws_server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        server, self._ws_server = self._ws_server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)

    async def _serve(self, websocket: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](32)
        conn = _Connection(write_send)

        async def reader() -> None:
            async with read_send:
                with contextlib.suppress(ConnectionClosed):
                    async for data in websocket:
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
                        except Exception as exc:  # the SDK answers what it can
                            await read_send.send(exc)
                            continue
                        await read_send.send(SessionMessage(message))
                        method = getattr(message, "method", None)
                        if method == "notifications/initialized":
                            conn.initialized = True
                            self._state.connections.add(conn)
                            await self._tell_where(conn)
                        elif method == "tools/list" and conn.initialized and not conn.retelling:
                            conn.retelling = True
                            tg.start_soon(self._retell, conn)

        async def writer() -> None:
            async with write_recv:
                with contextlib.suppress(ConnectionClosed):
                    async for item in write_recv:
                        await websocket.send(item.message.model_dump_json(by_alias=True, exclude_unset=True))

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(reader)
                tg.start_soon(writer)
                await self.server.run(read_recv, write_send, self.server.create_initialization_options())
                tg.cancel_scope.cancel()
        finally:
            self._state.connections.discard(conn)

    async def _send(self, conn: _Connection, params: dict[str, Any]) -> None:
        note = types.JSONRPCNotification(jsonrpc="2.0", method=SELECTION_CHANGED, params=params)
        try:
            await conn.write.send(SessionMessage(note))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._state.connections.discard(conn)

    # ------------------------------------------------------------------ selection_changed

    async def _tell_where(self, conn: _Connection) -> None:
        """A client just connected: where the editor is now (worked out now: with nobody connected,
        cursor moves are not followed)."""
        if self._state.last_sent is None:
            companion = await self.source.ready()
            sel = companion.selection(self.source.texts())
            self._state.last_sent = selection_params(sel) if sel is not None else None
        if self._state.last_sent is not None:
            await self._send(conn, self._state.last_sent)

    async def _retell(self, conn: _Connection) -> None:
        """Tell a client that just listed the tools where the editor is, again, a few times shortly
        after (see RETELL_AFTER); a client that moved on hears the newest state, a gone one nothing."""
        waited = 0.0
        for delay in RETELL_AFTER:
            await anyio.sleep(delay - waited)
            waited = delay
            if conn not in self._state.connections:
                return
            await self._tell_where(conn)

    async def selection_changed(self) -> None:
        """The cursor or selection moved (debounced by the caller): tell connected clients when
        what they would see differs from the last notification."""
        if not self._state.connections:
            self._state.last_sent = None  # nobody heard it: a client that connects is told afresh
            return
        companion = await self.source.ready()
        sel = companion.selection(self.source.texts())
        if sel is None:
            return  # nothing to tell (no editor, or a secret file): the last selection stands
        params = selection_params(sel)
        if params == self._state.last_sent:
            return
        self._state.last_sent = params
        if not sel.is_empty:
            self._state.latest = params
        for conn in list(self._state.connections):
            await self._send(conn, params)

    # ------------------------------------------------------------------ tools

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=_schema(tool.args),
                    annotations=types.ToolAnnotations(
                        read_only_hint=tool.name != "openDiff", destructive_hint=False, open_world_hint=False
                    ),
                )
                for tool in TOOLS
            ]
        )

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self._tools.get(params.name)
        if tool is None:
            return _texts_result(f"unknown tool {params.name!r}; the tools are {', '.join(self._tools)}", error=True)
        try:
            args = parse_object(tool.args, params.arguments or {}, tool.name)
            companion = await self.source.ready()
            result: types.CallToolResult = await getattr(self, "_" + tool.name)(companion, args)
            return result
        except ContextCompanionError as exc:
            return _texts_result(str(exc), error=True)
        except Exception as exc:
            log.exception("%s failed", tool.name)
            return _texts_result(f"{tool.name} failed: {type(exc).__name__}", error=True)

    async def _getCurrentSelection(self, companion: Companion, args: NoArgs) -> types.CallToolResult:
        sel = companion.selection(self.source.texts())
        if sel is None:
            return _json_result({"success": False, "message": "No active editor found"})
        return _json_result({"success": True, **selection_params(sel)})

    async def _getLatestSelection(self, companion: Companion, args: NoArgs) -> types.CallToolResult:
        latest = self._state.latest
        if latest is None:
            sel = companion.selection(self.source.texts())
            latest = selection_params(sel) if sel is not None and not sel.is_empty else None
        if latest is None:
            return _json_result({"success": False, "message": "No selection available"})
        return _json_result({"success": True, **latest})

    async def _getOpenEditors(self, companion: Companion, args: NoArgs) -> types.CallToolResult:
        active = companion.editor.active_uri()
        tabs = []
        for uri, path in companion.open_documents():
            tab: dict[str, Any] = {"uri": uri, "isActive": uri == active, "label": os.path.basename(path) or path}
            language = self.source.language_id(uri)
            if language:
                tab["languageId"] = language
            tabs.append(tab)
        return _json_result({"tabs": tabs})

    async def _getWorkspaceFolders(self, companion: Companion, args: NoArgs) -> types.CallToolResult:
        folders = [{"name": f.name, "uri": f.as_uri(), "path": str(f)} for f in companion.snapshot.folders]
        return _json_result({"success": True, "folders": folders, "rootPath": folders[0]["path"] if folders else None})

    async def _getDiagnostics(self, companion: Companion, args: DiagnosticsArgs) -> types.CallToolResult:
        texts = self.source.texts()
        uris = [args.uri] if args.uri is not None else [uri for uri, _ in companion.open_documents()]
        out = []
        for uri in uris:
            if not uri.startswith("file:") or companion.editor.is_excluded(uri):
                continue
            path = Path(uri_to_path(uri))
            if not companion.memory.is_memory_document(path):
                continue
            text = texts.get(uri)
            if text is None:
                text, _why = companion.memory.source_text(path)  # capped, never a FIFO or a link out
                if text is None:
                    continue
            lines = split_lines(text)
            out.append(
                {
                    "uri": uri,
                    "diagnostics": [_diagnostic(d, lines) for d in companion.memory.analyze(path, text).diagnostics],
                }
            )
        return _json_result(out)

    async def _openDiff(self, companion: Companion, args: OpenDiffArgs) -> types.CallToolResult:
        if not os.path.isabs(args.new_file_path):
            raise ContextCompanionError(f"openDiff: new_file_path must be absolute, got {args.new_file_path!r}")
        uri = Path(args.new_file_path).as_uri()
        outcome, text = await self.source.show_diff(uri, args.new_file_contents, args.tab_name)
        if outcome == "accepted":
            return _texts_result("FILE_SAVED", text if text is not None else args.new_file_contents)
        return _texts_result("DIFF_REJECTED", args.tab_name)


def _diagnostic(diag: Any, lines: list[str]) -> dict[str, Any]:
    def pos(p: Any) -> dict[str, int]:
        line = lines[p.line] if 0 <= p.line < len(lines) else ""
        return {"line": p.line, "character": units_from_column(line, p.character, "utf-16")}

    return {
        "message": diag.message,
        "severity": SEVERITY.get(str(diag.severity), "Warning"),
        "range": {"start": pos(diag.range.start), "end": pos(diag.range.end)},
        "source": "context-companion",
        "code": diag.code,
    }
