"""Gemini CLI's IDE companion: an MCP server (official Python SDK, Streamable HTTP) on the
language server's own asyncio loop.

What the CLI gets:

* ``ide/contextUpdate`` notifications with the editor's open files, cursor and selection (see
  :mod:`.context`), the first as soon as its listening (GET) stream is open, then on every change,
  debounced;
* the tools ``openDiff`` and ``closeDiff``; the editor shows the diff (through the
  :class:`Editor` the language server gives us) and the user's decision comes back as
  ``ide/diffAccepted`` / ``ide/diffRejected`` / ``ide/diffClosed``;
* a discovery file and environment variables telling it the port and token.

The protocol layer calls in (``schedule_update`` when the editor state changed, ``folders_changed``)
and reads the values it needs to send (``env``, ``status``); nothing here imports it.

Starting binds the port and writes the discovery file only. The HTTP server (uvicorn) and the MCP
server (the SDK, ~30 MiB) are loaded on a worker thread when the first connection waits on the
port, so an editor whose terminal never runs the CLI does not pay for them; the CLI's first
request waits ~0.5 s for it, once.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import importlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from ...discovery import new_token
from ...workspace.commands import MAX_OPEN_DIFFS
from ..http_host import ASGIApp, LocalHttpHost, Message, Receive, Scope, Send
from .context import workspace_state
from .discovery import IdeDiscoveryFile, IdeInfo, ide_dir_problem, remove_stale

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server import Server, ServerRequestContext
    from mcp.server.session import ServerSession

    from ...workspace.companion import Companion

log = logging.getLogger(__name__)

CONTEXT_UPDATE = "ide/contextUpdate"
DIFF_ACCEPTED = "ide/diffAccepted"
DIFF_REJECTED = "ide/diffRejected"
DIFF_CLOSED = "ide/diffClosed"
MCP_PATH = "/mcp"
SESSION_HEADER = b"mcp-session-id"
DEBOUNCE_S = 0.05
CLOSE_WAIT_S = 5.0

Outcome = Literal["accepted", "rejected", "closed"]


@dataclass(frozen=True)
class DiffAnswer:
    """The editor's answer to a diff: what the user did, and the text of the diff view then."""

    outcome: Outcome
    text: str | None = None


class Editor(Protocol):
    """What the companion needs from the editor connection (the language server provides it)."""

    @property
    def can_show_diff(self) -> bool: ...

    async def show_diff(self, uri: str, new_text: str, title: str) -> DiffAnswer: ...

    async def close_diff(self, uri: str) -> str | None: ...


@dataclass
class _Client:
    """One MCP session of a CLI: its session handle (after ``initialized``) and open GET streams."""

    session: ServerSession | None = None
    streams: int = 0

    @property
    def listening(self) -> bool:
        return self.session is not None and self.streams > 0


@dataclass
class _Diff:
    file_path: str
    session: ServerSession
    answer: asyncio.Future[DiffAnswer]
    suppress: bool = False
    task: asyncio.Task[None] | None = field(default=None, repr=False)


_FILE_PATH = {"type": "string", "description": "Absolute path of the file."}
# name → (description, properties besides filePath, required)
_TOOLS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "openDiff": (
        "Show a proposed new content of a file as a diff in the editor; the user accepts or rejects it.",
        {"newContent": {"type": "string", "description": "The proposed full content of the file."}},
        ["filePath", "newContent"],
    ),
    "closeDiff": (
        "Close the diff of a file, returning the content the diff view held.",
        {"suppressNotification": {"type": "boolean"}},
        ["filePath"],
    ),
}


@functools.cache
def _tools() -> list[types.Tool]:
    """openDiff and closeDiff, built the first time a CLI lists them (the SDK is loaded by then)."""
    import mcp_types as types

    return [
        types.Tool(
            name=name,
            description=description,
            input_schema={"type": "object", "properties": {"filePath": _FILE_PATH, **more}, "required": required},
        )
        for name, (description, more, required) in _TOOLS.items()
    ]


def _text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


class GeminiCompanion:
    """The companion for one editor connection. ``start`` on the loop, ``stop`` at the end."""

    def __init__(
        self,
        companion: Companion,
        texts: Mapping[str, str],
        editor: Editor,
        *,
        ide_pid: int,
        ide: IdeInfo,
        port: int = 0,
        directory: Path | None = None,
        debounce_s: float = DEBOUNCE_S,
    ) -> None:
        self._companion = companion
        self._texts = texts
        self._editor = editor
        self._ide_pid = ide_pid
        self._ide = ide
        self._requested_port = port
        self._directory = directory
        self._debounce_s = debounce_s
        self.token = new_token()
        self.port = 0
        self._host: LocalHttpHost | None = None
        self._discovery: IdeDiscoveryFile | None = None
        self._told_owner = False  # the discovery folder is another user's: logged once
        self._clients: dict[str, _Client] = {}
        self._diffs: dict[str, _Diff] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._last_sent: dict[str, Any] | None = None
        self._app: ASGIApp | None = None  # the MCP server's app, once a request needed it
        self._building = asyncio.Lock()

    # ------------------------------------------------------------------ lifecycle

    @property
    def running(self) -> bool:
        return self._host is not None

    async def start(self, listen: bool = True) -> None:
        """Listen on 127.0.0.1 and write the discovery file. Raises ``OSError`` when the port is taken.
        With ``listen=False`` the port is only reserved (its number known for :meth:`env`): nothing
        listens and no discovery file exists until :meth:`open`.

        Announcements left by servers that are gone (killed, crashed) are removed first: the CLI
        would otherwise pick one of them by directory order and fail to connect. The HTTP server
        starts with the first connection and the MCP server with its first request
        (:meth:`mcp_app`)."""
        await asyncio.to_thread(remove_stale, self._directory)
        host = LocalHttpHost(_Deferred(self), token=self.token, port=self._requested_port, lifespan="off")
        self.port = host.reserve()
        self._host = host
        if listen:
            self.open()

    def open(self) -> None:
        """Listen on the reserved port and write the discovery file (idempotent)."""
        host = self._host
        if host is None or host.listening:
            return
        host.open()
        self._write_discovery()
        log.info("Gemini CLI companion listening on 127.0.0.1:%d", self.port)

    @property
    def listening(self) -> bool:
        return self._host is not None and self._host.listening

    async def mcp_app(self) -> ASGIApp | None:
        """The MCP server's ASGI app, built when the first request needs it: the SDK is imported on
        a worker thread, and the host runs its sessions in a task of their own until :meth:`stop` (which
        ends them before the HTTP server). None once stopped."""
        if self._app is not None:  # every request after the first
            return self._app
        async with self._building:
            if self._app is None:
                await asyncio.to_thread(importlib.import_module, "mcp.server")
                import mcp_types as types
                from mcp.server import Server

                server: Server[Any] = Server(
                    "context-companion-gemini",
                    on_list_tools=self._list_tools,
                    on_call_tool=self._call_tool,
                )
                server.add_notification_handler(
                    "notifications/initialized", types.NotificationParams, self._initialized
                )
                app = _StreamWatch(server.streamable_http_app(streamable_http_path=MCP_PATH), self)
                host = self._host
                if host is None or not await host.run_sessions(server.session_manager):
                    return None  # stopped while the SDK was loading
                self._app = app
            return self._app

    def _write_discovery(self) -> None:
        if self._discovery is None:
            self._discovery = IdeDiscoveryFile(self._ide_pid, self.port, self.token, self._ide, self._directory)
            atexit.register(self._discovery.remove)
        try:
            self._discovery.write(self._folders())
        except OSError as exc:
            # The environment variables still lead a CLI started in the editor's terminal here.
            problem = ide_dir_problem(self._discovery.directory)
            if problem is None:
                log.warning("cannot write Gemini CLI's discovery file: %s", exc)
            elif not self._told_owner:  # another user's folder stays so: said once, with the fix
                self._told_owner = True
                log.warning("%s", problem)

    def remove_discovery_file(self) -> None:
        """Take the discovery file away now (synchronous: before a shutdown is answered)."""
        if self._discovery is not None:
            self._discovery.remove()
            atexit.unregister(self._discovery.remove)

    async def stop(self) -> None:
        self.remove_discovery_file()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for diff in list(self._diffs.values()):
            if diff.task is not None:
                diff.task.cancel()
        self._diffs.clear()
        host, self._host = self._host, None
        if host is not None:
            await host.stop()  # the MCP sessions (if any were started) end first: their open streams close
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
        self._clients.clear()

    def folders_changed(self) -> None:
        """Workspace folders changed: the CLI matches its cwd against ``workspacePath``."""
        if self.listening:
            self._write_discovery()
            self.schedule_update()

    # ------------------------------------------------------------------ what the editor is told

    def _folders(self) -> Sequence[Path]:
        return self._companion.snapshot.folders

    @property
    def discovery_path(self) -> Path | None:
        return self._discovery.path if self._discovery is not None else None

    def env(self) -> dict[str, str]:
        """Environment for the editor's terminals: a CLI started there connects here."""
        return {
            "GEMINI_CLI_IDE_SERVER_PORT": str(self.port),
            "GEMINI_CLI_IDE_AUTH_TOKEN": self.token,
            "GEMINI_CLI_IDE_WORKSPACE_PATH": IdeDiscoveryFile.workspace_path(self._folders()),
            "GEMINI_CLI_IDE_PID": str(self._ide_pid),
        }

    def connected_clients(self) -> int:
        return sum(1 for c in self._clients.values() if c.listening)

    def status(self) -> dict[str, Any]:
        path = self.discovery_path
        return {
            "running": self.running,
            "port": self.port if self.running else None,
            "discoveryFile": str(path) if path is not None and self.running and path.exists() else None,
            "connectedClients": self.connected_clients() if self.running else 0,
            "listening": self.listening,
        }

    # ------------------------------------------------------------------ context updates

    def schedule_update(self) -> None:
        """The editor state changed: tell listening CLIs after the debounce. Cheap per keystroke."""
        if self._timer is not None or not self._clients:
            return
        self._timer = asyncio.get_running_loop().call_later(self._debounce_s, self._flush)

    def _flush(self) -> None:
        self._timer = None
        state = self._state()
        if state == self._last_sent:
            return
        self._last_sent = state
        for client in self._clients.values():
            if client.listening:
                self._spawn(self._notify(client.session, CONTEXT_UPDATE, state))

    def _state(self) -> dict[str, Any]:
        c = self._companion
        enabled = c.snapshot.settings.context.enabled
        return workspace_state(c.editor, self._texts, c.snapshot.position_encoding, enabled=enabled)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notify(self, session: ServerSession | None, method: str, params: dict[str, Any]) -> None:
        if session is None:
            return
        import mcp_types as types

        note = types.Notification[dict[str, Any], str](method=method, params=params)
        try:
            # The SDK sends any notification model as its method and params; the IDE methods are
            # not in its union of spec notifications.
            await session.send_notification(cast("types.ServerNotification", note))
        except Exception as exc:  # a CLI that went away: nothing to tell
            log.debug("could not send %s: %s", method, exc)

    def _send_current(self, client: _Client) -> None:
        state = self._state()
        self._last_sent = state
        self._spawn(self._first_update(client, state))

    async def _first_update(self, client: _Client, state: dict[str, Any]) -> None:
        # The SDK registers the stream for server messages in the SSE response's own task, which
        # starts right after the response headers; a notification routed before then is dropped.
        await asyncio.sleep(0.02)
        await self._notify(client.session, CONTEXT_UPDATE, state)

    # ------------------------------------------------------------------ sessions (from the HTTP side)

    def stream_opened(self, session_id: str) -> None:
        client = self._clients.setdefault(session_id, _Client())
        client.streams += 1
        if client.listening:
            self._send_current(client)

    def stream_closed(self, session_id: str) -> None:
        client = self._clients.get(session_id)
        if client is not None:
            client.streams = max(client.streams - 1, 0)

    def session_ended(self, session_id: str) -> None:
        self._clients.pop(session_id, None)

    async def _initialized(self, ctx: ServerRequestContext[Any, Any], _: types.NotificationParams) -> None:
        session_id = _session_id(ctx)
        if session_id is None:
            return
        client = self._clients.setdefault(session_id, _Client())
        client.session = ctx.session
        if client.listening:  # the GET stream was quicker than this notification
            self._send_current(client)

    # ------------------------------------------------------------------ tools

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        import mcp_types as types

        return types.ListToolsResult(tools=_tools())

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "openDiff":
            return await self._open_diff(ctx.session, args)
        if params.name == "closeDiff":
            return await self._close_diff(args)
        return _text_result(f"unknown tool {params.name!r}; this server has openDiff and closeDiff", error=True)

    async def _open_diff(self, session: ServerSession, args: Mapping[str, Any]) -> types.CallToolResult:
        file_path, new_content = args.get("filePath"), args.get("newContent")
        if not isinstance(file_path, str) or not Path(file_path).is_absolute():
            return _text_result("openDiff: filePath must be an absolute path (a string)", error=True)
        if not isinstance(new_content, str):
            return _text_result("openDiff: newContent must be a string", error=True)
        if not self._editor.can_show_diff:
            return _text_result(
                "The editor connected to Context Companion cannot show diffs (it did not announce "
                "initializationOptions.capabilities.showDiff); the change was not shown.",
                error=True,
            )
        previous = self._diffs.get(file_path)
        if previous is None and len(self._diffs) >= MAX_OPEN_DIFFS:
            return _text_result(
                f"openDiff: {MAX_OPEN_DIFFS} diffs are already waiting for a decision; accept, reject or close one first",
                error=True,
            )
        if previous is not None:  # a newer proposal replaces the one on screen, silently
            previous.suppress = True
            await self._close_in_editor(previous)
        loop = asyncio.get_running_loop()
        diff = _Diff(file_path, session, loop.create_future())
        self._diffs[file_path] = diff
        title = f"{Path(file_path).name} ↔ Gemini CLI's proposed change"
        diff.task = loop.create_task(self._run_diff(diff, Path(file_path).as_uri(), new_content, title))
        import mcp_types as types

        return types.CallToolResult(content=[])

    async def _run_diff(self, diff: _Diff, uri: str, new_content: str, title: str) -> None:
        try:
            answer = await self._editor.show_diff(uri, new_content, title)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # An editor that failed to show it: the CLI must not wait ten minutes for a decision.
            log.warning("the editor could not show the diff of %s: %s", diff.file_path, exc)
            answer = DiffAnswer("rejected")
        if not diff.answer.done():
            diff.answer.set_result(answer)
        if self._diffs.get(diff.file_path) is diff:
            del self._diffs[diff.file_path]
        if diff.suppress:
            return
        if answer.outcome == "accepted":
            content = answer.text if answer.text is not None else new_content
            await self._notify(diff.session, DIFF_ACCEPTED, {"filePath": diff.file_path, "content": content})
        elif answer.outcome == "closed":
            params: dict[str, Any] = {"filePath": diff.file_path}
            if answer.text is not None:
                params["content"] = answer.text
            await self._notify(diff.session, DIFF_CLOSED, params)
        else:
            await self._notify(diff.session, DIFF_REJECTED, {"filePath": diff.file_path})

    async def _close_in_editor(self, diff: _Diff) -> str | None:
        """Ask the editor to close the diff; the content its view held (None when unknown)."""
        uri = Path(diff.file_path).as_uri()
        text: str | None = None
        try:
            text = await asyncio.wait_for(self._editor.close_diff(uri), CLOSE_WAIT_S)
        except Exception as exc:
            log.info("the editor did not close the diff of %s: %s", diff.file_path, exc)
        try:
            answer = await asyncio.wait_for(asyncio.shield(diff.answer), CLOSE_WAIT_S)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            answer = None
        if answer is None:  # the editor never answered the diff: stop waiting for it
            if diff.task is not None:
                diff.task.cancel()
            if self._diffs.get(diff.file_path) is diff:
                del self._diffs[diff.file_path]
            return text
        return answer.text if answer.text is not None else text

    async def _close_diff(self, args: Mapping[str, Any]) -> types.CallToolResult:
        file_path = args.get("filePath")
        if not isinstance(file_path, str):
            return _text_result("closeDiff: filePath must be a string", error=True)
        diff = self._diffs.get(file_path)
        content: str | None = None
        if diff is not None:
            diff.suppress = diff.suppress or bool(args.get("suppressNotification"))
            content = await self._close_in_editor(diff)
        return _text_result(json.dumps({"content": content}))


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    value = headers.get(SESSION_HEADER.decode())
    return str(value) if value else None


class _Deferred:
    """ASGI app: the MCP server's app, built when the first request (past the host's token, Host
    and Origin checks) reaches it."""

    def __init__(self, companion: GeminiCompanion) -> None:
        self._companion = companion

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = await self._companion.mcp_app()
        if app is None:  # the companion stopped meanwhile
            if scope["type"] == "http":
                await send({"type": "http.response.start", "status": 503, "headers": []})
                await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)


class _StreamWatch:
    """ASGI middleware: sees a CLI's listening (GET) stream open and close, and sessions end."""

    def __init__(self, app: ASGIApp, companion: GeminiCompanion) -> None:
        self._app = app
        self._companion = companion

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("GET", "DELETE"):
            await self._app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        session_id = headers.get(SESSION_HEADER, b"").decode("latin-1") or None
        if session_id is None:
            await self._app(scope, receive, send)
            return
        if scope["method"] == "DELETE":
            await self._app(scope, receive, send)
            self._companion.session_ended(session_id)
            return
        opened = False

        async def watch(message: Message) -> None:
            nonlocal opened
            if message["type"] == "http.response.start" and message.get("status") == 200 and not opened:
                opened = True
                self._companion.stream_opened(session_id)
            await send(message)

        try:
            await self._app(scope, receive, watch)
        finally:
            if opened:
                self._companion.stream_closed(session_id)
