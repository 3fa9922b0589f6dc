"""The language server: one thin handler per LSP method and custom command.

Each handler unpacks params (pydantic models in :mod:`.params`), makes one call on the
:class:`~.session.Session`, and converts the result. Bad params answer JSON-RPC InvalidParams
(-32602) naming the field; the server stays up.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types as t
from pygls.capabilities import ServerCapabilitiesBuilder
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

from .. import __version__
from ..context.positions import split_lines_keepends
from ..context.state import RawPosition, uri_to_path
from ..errors import ContextCompanionError, PromptError
from . import features

if TYPE_CHECKING:
    from .session import Session

# Everything heavy (pydantic models, settings, the memory store, watchdog, tiktoken) is imported
# after the initialize response has gone out: start-up then costs what a bare pygls server costs.
_HEAVY = ("context_companion.lsp.params", "context_companion.lsp.session")

log = logging.getLogger(__name__)

DID_CHANGE_CURSOR = "contextCompanion/didChangeCursor"
REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed

COMMANDS = (
    "contextCompanion.startSession",
    "contextCompanion.endSession",
    "contextCompanion.getSystemInstruction",
    "contextCompanion.refreshMemory",
    "contextCompanion.getTurnContext",
    "contextCompanion.buildMessages",
    "contextCompanion.getInitialHistory",
    "contextCompanion.showMemory",
    "contextCompanion.addMemory",
    "contextCompanion.getCompressionPrompt",
)


@attrs.define
class RawNotification:
    """A notification whose params stay a plain dict (no per-message namedtuple classes)."""

    method: str
    jsonrpc: str
    params: Any = None


@attrs.define
class _Ignored:
    jsonrpc: str = "ignored"


class Protocol(LanguageServerProtocol):
    RAW_METHODS = frozenset({DID_CHANGE_CURSOR})

    def get_message_type(self, method: str) -> Any:
        if method in self.RAW_METHODS:
            return RawNotification
        return super().get_message_type(method)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            # pygls would drop a request whose params do not fit the schema and leave the
            # client waiting forever: answer it.
            if "id" in data and "method" in data:
                method = data.get("method")
                error = JsonRpcInvalidParams(message=f"{method}: params do not match the LSP schema ({exc.message})")
                self._send_response(data["id"], None, error.to_response_error())
            return _Ignored()

    def handle_message(self, message: Any) -> None:
        if not hasattr(message, "jsonrpc"):  # a JSON value that is not a JSON-RPC message
            log.warning("ignored a message that is not JSON-RPC: %.200r", message)
            return
        super().handle_message(message)


class LspTextDocument(TextDocument):
    """pygls splits lines with ``str.splitlines``, which also breaks on form feeds, U+2028 and
    friends; editors do not, so incremental edits after such a character would land on the wrong
    line. Split the LSP way instead."""

    @property
    def lines(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(split_lines_keepends(self.source))


class LspWorkspace(Workspace):
    def _create_text_document(self, *args: Any, **kwargs: Any) -> TextDocument:
        doc = super()._create_text_document(*args, **kwargs)
        doc.__class__ = LspTextDocument
        return doc


class CompanionServer(LanguageServer):
    session: Session | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Errors in notifications (bad cursor params, a failed watcher event) are logged, not
        # shown: the user did nothing wrong, and a popup per keystroke would be worse.
        log.warning("%s", error)


def _text_of(server: CompanionServer) -> Callable[[str], str | None]:
    def text_of(uri: str) -> str | None:
        try:
            return server.workspace.get_text_document(uri).source
        except Exception:
            return None

    return text_of


def create_server() -> CompanionServer:
    server = CompanionServer(
        "context-companion",
        __version__,
        protocol_cls=Protocol,
        text_document_sync_kind=t.TextDocumentSyncKind.Incremental,
    )

    def notify(method: str, params: dict[str, Any]) -> None:
        server.protocol.notify(method, params)

    def show_error(message: str) -> None:
        server.window_show_message(t.ShowMessageParams(type=t.MessageType.Error, message=message))

    booted = asyncio.Event()
    early: list[Callable[[Session], None]] = []  # notifications that arrived before the boot

    def with_session(action: Callable[[Session], None]) -> None:
        if server.session is None:
            early.append(action)
        else:
            action(server.session)

    async def boot(folders: list[Path], options: Any, encoding: str) -> None:
        for name in _HEAVY:
            await asyncio.to_thread(importlib.import_module, name)
        from .session import Session

        session = Session(notify, show_error, _text_of(server))
        session.initialize(folders, options, encoding)
        session.after_memory_change = lambda: [
            features.schedule_publish(server, u, recheck=True) for u in session.editor.open_uris()
        ]
        server.session = session
        for action in early:
            action(session)
        early.clear()
        booted.set()
        try:
            await session.start()
        except Exception:
            log.exception("start-up failed")
            session.ready.set()

    # ------------------------------------------------------------------ lifecycle

    @server.feature(t.INITIALIZE)
    def initialize(params: t.InitializeParams) -> None:
        server.workspace.__class__ = LspWorkspace  # created by pygls just before this handler
        folders = [Path(uri_to_path(f.uri)) for f in (params.workspace_folders or [])]
        if not folders and params.root_uri:
            folders = [Path(uri_to_path(params.root_uri))]
        elif not folders and params.root_path:
            folders = [Path(params.root_path)]
        encoding = str(ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities))
        server._boot_task = asyncio.get_running_loop().create_task(
            boot(folders, params.initialization_options, encoding)
        )

    @server.feature(t.INITIALIZED)
    async def initialized(params: t.InitializedParams) -> None:
        await booted.wait()
        await _pull_configuration()

    async def _pull_configuration() -> None:
        caps = server.client_capabilities
        if not (caps.workspace and caps.workspace.configuration):
            return
        try:
            result = await server.workspace_configuration_async(
                t.ConfigurationParams(items=[t.ConfigurationItem(section="contextCompanion")])
            )
        except Exception as exc:
            log.info("workspace/configuration failed: %s", exc)
            return
        section = result[0] if result else None
        if section is None:
            return
        await _apply_settings(section)

    async def _apply_settings(section: Any) -> None:
        assert server.session is not None
        error = await server.session.apply_editor_settings(section)
        if error:
            show_error(error)

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: t.DidChangeConfigurationParams) -> None:
        await booted.wait()
        caps = server.client_capabilities
        if caps.workspace and caps.workspace.configuration:
            await _pull_configuration()
            return
        settings = params.settings
        if settings is None:
            return  # nothing new: keep what is in force
        if isinstance(settings, dict) and "contextCompanion" in settings:
            settings = settings["contextCompanion"]
        await _apply_settings(settings)

    @server.feature(t.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(params: t.DidChangeWorkspaceFoldersParams) -> None:
        await booted.wait()
        assert server.session is not None
        await server.session.set_folders([Path(uri_to_path(f.uri)) for f in server.workspace.folders.values()])

    @server.feature(t.SHUTDOWN)
    def shutdown(*_: Any) -> None:
        if server.session is not None:
            server.session.shutdown()

    # ------------------------------------------------------------------ documents and cursor

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: t.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        with_session(lambda s: (s.did_open(uri), features.publish(server, uri)))

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: t.DidChangeTextDocumentParams) -> None:
        if server.session is not None:
            features.schedule_publish(server, params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: t.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        with_session(lambda s: (s.did_close(uri), features.clear(server, uri)))

    cursor_model: list[Any] = []

    @server.feature(DID_CHANGE_CURSOR)
    def did_change_cursor(params: Any) -> None:
        if not cursor_model:
            from .params import DidChangeCursorParams, parse_object

            cursor_model.append(lambda raw: parse_object(DidChangeCursorParams, raw, DID_CHANGE_CURSOR))
        p = cursor_model[0](params)
        position = RawPosition(p.position.line, p.position.character)
        selections = [
            (RawPosition(r.start.line, r.start.character), RawPosition(r.end.line, r.end.character))
            for r in p.selections
        ]
        session = server.session
        if session is not None:  # the hot path: no closure per message
            session.did_change_cursor(p.text_document.uri, position, selections)
        else:
            early.append(lambda s: s.did_change_cursor(p.text_document.uri, position, selections))

    features.register(server)

    # ------------------------------------------------------------------ commands

    def command(name: str, model_name: str, run: Callable[[Session, Any], Any | Awaitable[Any]]) -> None:
        async def handler(*args: Any) -> Any:
            await booted.wait()
            from . import params as P

            params = _parse(getattr(P, model_name), args, name)
            session = server.session
            assert session is not None
            await session.ready.wait()
            try:
                result = run(session, params)
                if asyncio.iscoroutine(result):
                    result = await result
                return result
            except ContextCompanionError as exc:
                if isinstance(exc, PromptError):
                    raise JsonRpcException(code=REQUEST_FAILED, message=f"{name}: {exc}") from None
                raise JsonRpcInvalidParams(
                    message=str(exc) if type(exc).__name__ == "ParamsError" else f"{name}: {exc}"
                ) from None
            except JsonRpcException:
                raise
            except Exception as exc:
                log.exception("%s failed", name)
                raise JsonRpcInternalError(message=f"{name} failed: {type(exc).__name__}: {exc}") from None

        server.command(name)(handler)

    def _parse(model: type, args: tuple, name: str) -> Any:
        from .params import ParamsError, parse

        try:
            return parse(model, args, name)
        except ParamsError as exc:
            raise JsonRpcInvalidParams(message=str(exc)) from None

    command(
        "contextCompanion.startSession", "StartSessionParams", lambda s, p: s.start_session(p.session_id, p.profile)
    )
    command("contextCompanion.endSession", "EndSessionParams", lambda s, p: s.end_session(p.session_id))
    command(
        "contextCompanion.getSystemInstruction",
        "GetSystemInstructionParams",
        lambda s, p: s.system_instruction(p.session_id, p.if_none_match),
    )
    command("contextCompanion.refreshMemory", "RefreshMemoryParams", lambda s, p: s.refresh_memory())
    command(
        "contextCompanion.getTurnContext",
        "GetTurnContextParams",
        lambda s, p: s.turn_context(p.session_id, p.force_full, p.pending_tool_call).to_wire(),
    )
    command(
        "contextCompanion.buildMessages",
        "BuildMessagesParams",
        lambda s, p: s.messages(p.session_id, [m.model_dump() for m in p.messages], p.include_turn_context),
    )
    command("contextCompanion.getInitialHistory", "SessionOnlyParams", lambda s, p: s.initial_history(p.session_id))
    command("contextCompanion.showMemory", "EmptyParams", lambda s, p: s.show_memory())
    command("contextCompanion.addMemory", "AddMemoryParams", lambda s, p: s.add_memory(p.fact, p.scope))
    command("contextCompanion.getCompressionPrompt", "EmptyParams", lambda s, p: s.compression())
    return server
