"""The JSON-RPC protocol tweaks and the document classes of the language server.

:class:`Protocol` answers what pygls would leave unanswered (messages that are not LSP's
JSON-RPC: see :mod:`.envelope`; requests to notification methods, off the schema, before
``initialize``, a second ``initialize``, after ``shutdown``), strips tracebacks and the server's
own paths from errors, and forgets every future pygls keeps once it is done (pygls keeps those
of its own generator steps and notifications, and of requests the client never answers, for
good). :class:`LspWorkspace` splits lines the LSP way and keys documents by one URI spelling. The
lowest module of ``lsp/``: it imports none of the others.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from concurrent.futures import Future
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
from ..workspace.commands import NOTIFICATIONS
from .envelope import INVALID_REQUEST, batch_ids, refusal, valid_id

log = logging.getLogger(__name__)

DID_CHANGE_CURSOR = "contextCompanion/didChangeCursor"
# Every notification method, LSP's and ours: a request (with an id) to one is refused.
NOTIFICATION_METHODS = frozenset(
    {m for m, (message, *_) in t.METHOD_TO_TYPES.items() if "id" not in attrs.fields_dict(message)} | set(NOTIFICATIONS)
)
# Requests we sent that the client has not answered (yet): past this many, the oldest is failed
# and forgotten, so a client that never answers (``workspace/configuration``, a diff it never
# closes) cannot grow the server.
MAX_UNANSWERED = 100


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


IGNORED = _Ignored()  # a message already answered or dropped: nothing more to do


class Protocol(LanguageServerProtocol):
    RAW_METHODS = frozenset({DID_CHANGE_CURSOR})

    def get_message_type(self, method: str) -> Any:  # type: ignore[override]  # pygls caches it with lru_cache
        if method in self.RAW_METHODS:
            return RawNotification
        return super().get_message_type(method)

    def structure_message(self, data: Any) -> Any:
        """The message pygls handles, from the parsed JSON of one frame (the top level only: the
        transports no longer hand every nested object through here). A value that is not an LSP
        message is answered InvalidRequest here and becomes :data:`IGNORED`."""
        refused = refusal(data, NOTIFICATION_METHODS)
        if refused is not None:
            if isinstance(data, list):
                ids: list[int | str | None] = [*batch_ids(data, NOTIFICATION_METHODS)]
                for msg_id in ids or [None]:
                    self.refuse(msg_id, INVALID_REQUEST, refused.reason)
            elif refused.answer:
                self.refuse(refused.msg_id, INVALID_REQUEST, refused.reason)
            else:
                log.warning("ignored a response that is not JSON-RPC 2.0: %s", refused.reason)
            return IGNORED
        if "method" in data and "params" not in data and self.get_message_type(str(data["method"])) is None:
            # JSON-RPC lets a request or notification leave params out; pygls' generic message type needs
            # the key. With it, an unknown method is answered MethodNotFound (-32601), not InvalidParams.
            data = {**data, "params": None}
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
            return IGNORED

    def refuse(self, msg_id: int | str | None, code: int, reason: str) -> _Ignored:
        """Answer a message that cannot be served (``msg_id`` None: JSON ``null``, as JSON-RPC
        says when the id cannot be read) with one error, logged in one line."""
        log.warning(
            "answered %d to a malformed message (id %s): %s", code, "null" if msg_id is None else msg_id, reason
        )
        if msg_id is None:  # lsprotocol's message class would leave out the null id JSON-RPC wants
            self._send_data({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": reason}})
        else:
            self._send_response(msg_id, None, t.ResponseError(code=code, message=reason))
        return IGNORED

    _initialize_seen = False

    def handle_message(self, message: Any) -> None:
        if message is IGNORED:
            return
        if not hasattr(message, "jsonrpc"):  # not reachable through structure_message: a guard
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

    def _lifecycle_refusal(self, method: str) -> JsonRpcException | None:
        """The error for a request the lifecycle does not allow now (pygls answers none of them:
        it serves requests before initialize and a second initialize, which switched the
        workspace, and silently drops requests after shutdown)."""
        if self._shutdown:
            return JsonRpcInvalidRequest(f"{method}: the server is shutting down; only exit is accepted")
        if not self._initialize_seen and method != t.INITIALIZE:
            return _NotInitialized(f"{method}: the server is not initialized; send initialize first")
        if self._initialize_seen and method == t.INITIALIZE:
            return JsonRpcInvalidRequest("initialize: the server is already initialized (LSP allows one initialize)")
        return None

    # ------------------------------------------------------------------ what pygls keeps

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Callable[..., Any],
        callback: Callable[[Future[Any]], None],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        # pygls files the future of every async, threaded or generator handler under its id in
        # ``_request_futures``; only the answer to a client's request takes it out again. A
        # notification's handler and each step of a generator handler (executeCommand, didOpen,
        # didChange, didClose, ... run the user's handler as a step under a fresh uuid) stayed
        # for good, with the step's result: every async command's answer and every didChange
        # was kept. Forget each once it is done (cancel_in_flight still sees the ones running).
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(partial(self._forget, msg_id))

    def _forget(self, msg_id: Any, future: Any) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: Any = None,
    ) -> Future[Any]:
        future = super().send_request(method, params, callback, msg_id)
        # pygls keeps the result type and the future of a request until its answer comes: never,
        # for a client that does not answer. Past MAX_UNANSWERED the oldest is failed and forgotten.
        while len(self._result_types) > MAX_UNANSWERED:
            oldest = next(iter(self._result_types))
            del self._result_types[oldest]
            stale = self._request_futures.pop(oldest, None)
            if stale is not None and not stale.done():
                log.warning(
                    "no answer from the client to request %s; gave up on it (%d unanswered)", oldest, MAX_UNANSWERED
                )
                stale.set_exception(JsonRpcException(message=f"no answer from the client (request {oldest})"))
        return future

    def _handle_response(self, msg_id: Any, result: Any | None = None, error: t.ResponseError | None = None) -> None:
        # pygls forgets the result type of a request when its answer is a result, not an error.
        if valid_id(msg_id):
            self._result_types.pop(msg_id, None)
        super()._handle_response(msg_id, result, error)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        """``$/cancelRequest``: cancel a request of the client's still running. An id that is no
        integer or string (pygls failed with "unhashable type"), or that is not one of the client's
        requests in flight (often: it was answered already), is ignored quietly."""
        if not valid_id(msg_id) or msg_id in self._result_types:
            log.debug("ignored $/cancelRequest for id %.40r", msg_id)
            return
        future = self._request_futures.get(msg_id)
        if future is None:
            log.debug("ignored $/cancelRequest for id %s: no such request in flight", msg_id)
            return
        super()._handle_cancel_notification(msg_id)

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
