"""The MCP side of Claude Code's IDE integration (:mod:`.claude_code`): the official SDK's server,
framed over the WebSocket one JSON-RPC message per text frame (the SDK has no WebSocket server
transport), the editor-state tools, ``openDiff`` and ``selection_changed``. Loaded when the first
client that passed the handshake's checks connects: the SDK costs tens of MiB that an editor whose
terminal never runs Claude Code should not pay.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ConfigDict

from .. import __version__
from ..context.positions import split_lines, units_from_column
from ..errors import ContextCompanionError
from ..uris import normalize_uri, uri_to_path
from ..workspace.commands import MAX_OPEN_DIFFS
from ..workspace.companion import Companion
from ..workspace.params import parse_object
from .claude_code_state import BridgeState, Connection, EditorSource, selection_params

log = logging.getLogger(__name__)

SELECTION_CHANGED = "selection_changed"
# Claude Code subscribes to selection_changed only once it has connected and listed the tools (a UI
# update with no message to say so; a notification before it is dropped): the editor's state is told
# again this many seconds after the client's tools/list, so a selection made before Claude Code
# started reaches its first prompt.
RETELL_AFTER = (0.1, 0.5, 2.0)
SEVERITY = {"error": "Error", "warning": "Warning", "information": "Information", "hint": "Hint"}


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


class ClaudeCodeMcp:
    """The MCP server the bridge's connections talk to; one per bridge, built at the first one."""

    def __init__(self, source: EditorSource, state: BridgeState) -> None:
        self.source = source
        self._state = state
        self._tools = {tool.name: tool for tool in TOOLS}
        self._open_diffs = 0  # openDiff calls waiting for the user's decision
        self.server: Server[Any] = Server(
            "context-companion",
            version=__version__,
            title="Context Companion (IDE)",
            instructions="The editor's state: selection, open editors, workspace folders, memory-file "
            "diagnostics; openDiff shows a proposed change for the user to accept or reject.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def serve(self, websocket: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](32)
        conn = Connection(write_send)

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
            self._gone(conn)

    def _gone(self, conn: Connection) -> None:
        self._state.connections.discard(conn)
        if not self._state.connections:
            self._state.last_sent = None  # nobody heard it: a client that connects is told afresh

    async def _send(self, conn: Connection, params: dict[str, Any]) -> None:
        note = types.JSONRPCNotification(jsonrpc="2.0", method=SELECTION_CHANGED, params=params)
        try:
            await conn.write.send(SessionMessage(note))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._gone(conn)

    # ------------------------------------------------------------------ selection_changed

    async def _tell_where(self, conn: Connection) -> None:
        """A client just connected: where the editor is now (worked out now: with nobody connected,
        cursor moves are not followed)."""
        if self._state.last_sent is None:
            companion = await self.source.ready()
            sel = companion.selection(self.source.texts())
            self._state.last_sent = selection_params(sel) if sel is not None else None
            if sel is not None and not sel.is_empty:
                self._state.latest = self._state.last_sent
        if self._state.last_sent is not None:
            await self._send(conn, self._state.last_sent)

    async def _retell(self, conn: Connection) -> None:
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
            return
        companion = await self.source.ready()
        sel = companion.selection(self.source.texts())
        if sel is None:
            return  # nothing to tell (no editor, or a secret file): the last selection stands
        params = selection_params(sel)
        if not sel.is_empty:
            self._state.latest = (
                params  # also when a client was just told it (_tell_where): getLatestSelection reads it
            )
        if params == self._state.last_sent:
            return
        self._state.last_sent = params
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
        uris = [normalize_uri(args.uri)] if args.uri is not None else [uri for uri, _ in companion.open_documents()]
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
        if self._open_diffs >= MAX_OPEN_DIFFS:
            raise ContextCompanionError(
                f"openDiff: {MAX_OPEN_DIFFS} diffs are already waiting for a decision; accept, reject or close one first"
            )
        uri = Path(args.new_file_path).as_uri()
        self._open_diffs += 1
        try:
            outcome, text = await self.source.show_diff(uri, args.new_file_contents, args.tab_name)
        finally:
            self._open_diffs -= 1
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
