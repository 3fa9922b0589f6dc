"""The JSON-RPC protocol tweaks and the document classes of the language server.

:class:`Protocol` answers what pygls would leave unanswered (requests off the schema, requests
before ``initialize`` or after ``shutdown``), strips tracebacks and the server's own paths from
errors and forgets the handlers of notifications once they ran (pygls keeps them forever);
:class:`LspWorkspace` splits lines the LSP way and keys documents by one URI spelling. The lowest module of ``lsp/``: it
imports none of the others.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import unquote

import attrs
import pygls
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

from ..context.positions import split_lines_keepends
from ..uris import normalize_uri

log = logging.getLogger(__name__)

DID_CHANGE_CURSOR = "contextCompanion/didChangeCursor"


class _NotInitialized(JsonRpcException):
    CODE = -32002  # LSP ErrorCodes.ServerNotInitialized
    MESSAGE = "Server not initialized"


_CODE_DIRS = tuple(
    {os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(os.path.abspath(pygls.__file__))}
)
_PATH_IN_TEXT = re.compile(r"(?:File )?\"?(/[^\s\"']+\.py)\"?(?:, line \d+)?")


def _without_internals(error: t.ResponseError) -> t.ResponseError:
    """The error without a traceback in ``data`` and without paths of the server's own code
    (or of its libraries) in the message."""
    message = error.message
    if "Traceback (most recent call last)" in message:
        message = message.split("Traceback (most recent call last)")[0].strip() or "internal error (see the server log)"
    message = _PATH_IN_TEXT.sub(_redact_code_path, message)
    data = error.data
    if isinstance(data, dict) and "traceback" in data:
        data = {k: v for k, v in data.items() if k != "traceback"} or None
    if message == error.message and data is error.data:
        return error
    return t.ResponseError(code=error.code, message=message, data=data)


def _redact_code_path(match: re.Match[str]) -> str:
    path = match.group(1)
    if "site-packages" in path or any(path.startswith(d + os.sep) for d in _CODE_DIRS):
        return "<server code>"
    return match.group(0)


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

    def get_message_type(self, method: str) -> Any:  # type: ignore[override]  # pygls caches it with lru_cache
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
                error = self._lifecycle_refusal(str(method)) or JsonRpcInvalidParams(
                    message=f"{method}: params do not match the LSP schema ({exc.message})"
                )
                log.warning("%s", error.message)  # one line; pygls' own record (a traceback) is filtered
                self._send_response(data["id"], None, error.to_response_error())
            else:
                log.warning("%s: params do not match the LSP schema; ignored", data.get("method"))
            return _Ignored()

    _initialize_seen = False

    def handle_message(self, message: Any) -> None:
        if not hasattr(message, "jsonrpc"):  # a JSON value that is not a JSON-RPC message
            log.warning("ignored a message that is not JSON-RPC: %.200r", message)
            return
        method = getattr(message, "method", None)
        is_request = method is not None and hasattr(message, "id")
        if is_request:
            refusal = self._lifecycle_refusal(str(method))
            if refusal is not None:
                log.info("%s", refusal.message)
                self._send_response(message.id, None, refusal.to_response_error())
                return
            if method == t.INITIALIZE:
                self._initialize_seen = True
        elif method is not None and (self._shutdown or not self._initialize_seen):
            log.debug("dropped %s: it came before initialize or after shutdown", method)
            return
        super().handle_message(message)

    def cancel_in_flight(self) -> None:
        """Cancel every request still running (each is answered RequestCancelled).

        pygls does this after the user's shutdown handler, iterating the live dict; cancelling a
        request handled by a generator runs its callback at once, which removes it from that dict
        and fails the shutdown with "dictionary changed size during iteration". Cancelling here,
        over a copy, leaves pygls nothing to do.
        """
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Callable[[Any], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls files the future of every handler it runs under its message id in
        ``_request_futures`` (so that a cancel can find it) and removes it only when it answers a
        request. A notification, and each step of a built-in handler that calls ours (``didOpen``,
        ``didChange``, ``didClose`` are such generators), is filed under a fresh id that nothing
        removes: every keystroke kept about 2 KiB for the life of the server (19 MiB per 10,000
        ``didChange``). Those are forgotten once done."""
        if not (isinstance(callback, partial) and callback.func == self._send_handler_result):
            callback = partial(self._forget_then, msg_id, callback)
        super()._execute_handler(msg_id, handler, callback, args, kwargs)

    def _forget_then(self, msg_id: Any, callback: Callable[[Any], None], future: Any) -> None:
        self._request_futures.pop(msg_id, None)
        callback(future)

    def _lifecycle_refusal(self, method: str) -> JsonRpcException | None:
        """The error for a request the lifecycle does not allow now (pygls answers neither: it
        serves requests before initialize and silently drops those after shutdown)."""
        if self._shutdown:
            return JsonRpcInvalidRequest(f"{method}: the server is shutting down; only exit is accepted")
        if not self._initialize_seen and method != t.INITIALIZE:
            return _NotInitialized(f"{method}: the server is not initialized; send initialize first")
        return None

    def _send_response(self, msg_id: Any, result: Any = None, error: t.ResponseError | None = None) -> None:
        # pygls puts the traceback of an unexpected exception into the error's data and its text
        # into the message: the client gets neither the traceback nor our file paths.
        if error is not None:
            error = _without_internals(error)
        super()._send_response(msg_id, result, error)


class LspTextDocument(TextDocument):
    """pygls splits lines with ``str.splitlines``, which also breaks on form feeds, U+2028 and
    friends; editors do not, so incremental edits after such a character would land on the wrong
    line. Split the LSP way instead."""

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(split_lines_keepends(self.source))


class LspWorkspace(Workspace):
    """pygls' workspace with LSP line splitting, whose documents and folders are keyed by the one
    spelling of their URI (:func:`~context_companion.uris.normalize_uri`), as the handlers see them.

    pygls keys them by ``unquote(uri)``: ``file:///My%20Projects/a.py`` is stored under
    ``file:///My Projects/a.py``, which no handler looks up, and whose ``#`` reads as a fragment.
    """

    def adopt(self) -> None:
        """Re-key what pygls stored before the class became this one (the initial folders)."""
        self._folders = {normalize_uri(f.uri): f for f in self._folders.values()}
        self._text_documents = {normalize_uri(d.uri): d for d in self._text_documents.values()}

    def _create_text_document(self, *args: Any, **kwargs: Any) -> TextDocument:
        doc = super()._create_text_document(*args, **kwargs)
        doc.__class__ = LspTextDocument
        return doc

    def add_folder(self, folder: t.WorkspaceFolder) -> None:
        self._folders[normalize_uri(folder.uri)] = folder

    def remove_folder(self, folder_uri: str) -> None:
        self._folders.pop(normalize_uri(folder_uri), None)

    def get_text_document(self, doc_uri: str) -> TextDocument:
        uri = normalize_uri(doc_uri)
        return self._text_documents.get(uri) or self._create_text_document(uri)

    def put_text_document(self, text_document: t.TextDocumentItem, notebook_uri: str | None = None) -> None:
        uri = normalize_uri(text_document.uri)
        self._text_documents[uri] = self._create_text_document(
            uri, source=text_document.text, version=text_document.version, language_id=text_document.language_id
        )
        if notebook_uri:  # pygls' own notebook lookups keep their keys
            self._cell_in_notebook[unquote(text_document.uri)] = unquote(notebook_uri)

    def remove_text_document(self, doc_uri: str) -> None:
        self._text_documents.pop(normalize_uri(doc_uri), None)
        self._cell_in_notebook.pop(unquote(doc_uri), None)

    def update_text_document(
        self, text_doc: t.VersionedTextDocumentIdentifier, change: t.TextDocumentContentChangeEvent
    ) -> None:
        document = self._text_documents[normalize_uri(text_doc.uri)]
        document.apply_change(change)
        document.version = text_doc.version
