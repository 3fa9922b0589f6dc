"""The language server: one thin handler per LSP method and custom command.

Each handler unpacks params (pydantic models in :mod:`.params`), makes one call on the
:class:`~.session.Session`, and converts the result. Bad params answer JSON-RPC InvalidParams
(-32602) naming the field; the server stays up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
from lsprotocol import types as t
from pygls.capabilities import ServerCapabilitiesBuilder
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from .. import __version__
from ..context.state import RawPosition, uri_to_path
from ..errors import ContextCompanionError, PromptError
from . import features
from .params import (
    AddMemoryParams,
    BuildMessagesParams,
    DidChangeCursorParams,
    EmptyParams,
    EndSessionParams,
    GetSystemInstructionParams,
    GetTurnContextParams,
    ParamsError,
    RefreshMemoryParams,
    SessionOnlyParams,
    StartSessionParams,
    parse,
    parse_object,
)
from .session import Session

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


class CompanionServer(LanguageServer):
    session: Session

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Errors in notifications (bad cursor params, a failed watcher event) are logged, not
        # shown: the user did nothing wrong, and a popup per keystroke would be worse.
        log.warning("%s", error)


def _text_of(server: CompanionServer) -> Callable[[str], str | None]:
    def text_of(uri: str) -> str | None:
        try:
            return server.workspace.get_text_document(uri).source
        except Exception:  # noqa: BLE001 - closed or unknown document
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

    session = server.session = Session(notify, show_error, _text_of(server))

    # ------------------------------------------------------------------ lifecycle

    @server.feature(t.INITIALIZE)
    def initialize(params: t.InitializeParams) -> None:
        folders = [Path(uri_to_path(f.uri)) for f in (params.workspace_folders or [])]
        if not folders and params.root_uri:
            folders = [Path(uri_to_path(params.root_uri))]
        elif not folders and params.root_path:
            folders = [Path(params.root_path)]
        encoding = str(ServerCapabilitiesBuilder.choose_position_encoding(params.capabilities))
        session.initialize(folders, params.initialization_options, encoding)

    @server.feature(t.INITIALIZED)
    async def initialized(params: t.InitializedParams) -> None:
        try:
            await session.start()
        except Exception:  # noqa: BLE001 - serve what we can rather than hang
            log.exception("start-up failed")
            session.ready.set()
        await _pull_configuration()

    async def _pull_configuration() -> None:
        caps = server.client_capabilities
        if not (caps.workspace and caps.workspace.configuration):
            return
        try:
            result = await server.workspace_configuration_async(
                t.ConfigurationParams(items=[t.ConfigurationItem(section="contextCompanion")])
            )
        except Exception as exc:  # noqa: BLE001 - the client may not answer: keep what we have
            log.info("workspace/configuration failed: %s", exc)
            return
        section = result[0] if result else None
        if section is None:
            return
        _apply_settings(section)

    def _apply_settings(section: Any) -> None:
        error = session.apply_editor_settings(section)
        if error:
            show_error(error)

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: t.DidChangeConfigurationParams) -> None:
        caps = server.client_capabilities
        if caps.workspace and caps.workspace.configuration:
            await _pull_configuration()
            return
        settings = params.settings
        if isinstance(settings, dict) and "contextCompanion" in settings:
            settings = settings["contextCompanion"]
        _apply_settings(settings)

    @server.feature(t.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(params: t.DidChangeWorkspaceFoldersParams) -> None:
        folders = [Path(uri_to_path(f.uri)) for f in server.workspace.folders.values()]
        session.set_folders(folders)

    @server.feature(t.SHUTDOWN)
    def shutdown(*_: Any) -> None:
        session.shutdown()

    # ------------------------------------------------------------------ documents and cursor

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: t.DidOpenTextDocumentParams) -> None:
        session.did_open(params.text_document.uri)
        features.publish(server, params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: t.DidChangeTextDocumentParams) -> None:
        features.schedule_publish(server, params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: t.DidCloseTextDocumentParams) -> None:
        session.did_close(params.text_document.uri)
        features.clear(server, params.text_document.uri)

    @server.feature(DID_CHANGE_CURSOR)
    def did_change_cursor(params: Any) -> None:
        p = parse_object(DidChangeCursorParams, params, DID_CHANGE_CURSOR)
        session.did_change_cursor(
            p.text_document.uri,
            RawPosition(p.position.line, p.position.character),
            [(RawPosition(r.start.line, r.start.character), RawPosition(r.end.line, r.end.character)) for r in p.selections],
        )

    features.register(server)
    session.after_memory_change = lambda: [features.schedule_publish(server, u) for u in session.editor.open_uris()]

    # ------------------------------------------------------------------ commands

    def command(name: str, model: type, run: Callable[[Any], Any | Awaitable[Any]]) -> None:
        async def handler(*args: Any) -> Any:
            params = _parse(model, args, name)
            await session.ready.wait()
            try:
                result = run(params)
                if asyncio.iscoroutine(result):
                    result = await result
                return result
            except (ParamsError, ContextCompanionError) as exc:
                if isinstance(exc, PromptError):
                    raise JsonRpcException(code=REQUEST_FAILED, message=f"{name}: {exc}") from None
                raise JsonRpcInvalidParams(message=str(exc) if isinstance(exc, ParamsError) else f"{name}: {exc}") from None
            except JsonRpcException:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug: log it, answer without a traceback
                log.exception("%s failed", name)
                raise JsonRpcInternalError(message=f"{name} failed: {type(exc).__name__}: {exc}") from None

        server.command(name)(handler)

    def _parse(model: type, args: tuple, name: str) -> Any:
        try:
            return parse(model, args, name)
        except ParamsError as exc:
            raise JsonRpcInvalidParams(message=str(exc)) from None

    command("contextCompanion.startSession", StartSessionParams, lambda p: session.start_session(p.session_id, p.profile))
    command("contextCompanion.endSession", EndSessionParams, lambda p: session.end_session(p.session_id))
    command(
        "contextCompanion.getSystemInstruction",
        GetSystemInstructionParams,
        lambda p: session.system_instruction(p.session_id, p.if_none_match),
    )
    command("contextCompanion.refreshMemory", RefreshMemoryParams, lambda p: session.refresh_memory())
    command(
        "contextCompanion.getTurnContext",
        GetTurnContextParams,
        lambda p: session.turn_context(p.session_id, p.force_full, p.pending_tool_call).to_wire(),
    )
    command(
        "contextCompanion.buildMessages",
        BuildMessagesParams,
        lambda p: session.messages(p.session_id, [m.model_dump() for m in p.messages], p.include_turn_context),
    )
    command("contextCompanion.getInitialHistory", SessionOnlyParams, lambda p: session.initial_history(p.session_id))
    command("contextCompanion.showMemory", EmptyParams, lambda p: session.show_memory())
    command("contextCompanion.addMemory", AddMemoryParams, lambda p: session.add_memory(p.fact, p.scope))
    command("contextCompanion.getCompressionPrompt", EmptyParams, lambda p: session.compression())
    return server
