"""Text synchronisation and the cursor: the editor state the turn context is built from.

These run on every keystroke or cursor move: no closures per message, and the cursor's params stay
a plain dict (see :class:`~.protocol.Protocol`). Each URI is put in its one spelling here, where it
enters (:func:`~context_companion.uris.normalize_uri`, as pygls' document store does in
:class:`~.protocol.LspWorkspace`): the editor state, the texts and diagnostics agree on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types as t

from ..uris import normalize_uri, uri_to_path
from .protocol import DID_CHANGE_CURSOR

if TYPE_CHECKING:
    from ..context.state import RawPosition
    from ..workspace.companion import Companion
    from .runtime import CompanionServer

OPEN_FILES_CHANGED = "openFilesChanged"


def did_open(ls: CompanionServer, params: t.DidOpenTextDocumentParams) -> None:
    uri = normalize_uri(params.text_document.uri)
    ls.when_booted(lambda c: _opened_or_closed(ls, c, uri, opened=True))


def did_change(ls: CompanionServer, params: t.DidChangeTextDocumentParams) -> None:
    if ls.companion is not None:
        ls.diagnostics.schedule(normalize_uri(params.text_document.uri))
        ls.gemini.schedule_update()  # the selected text may have changed


def did_close(ls: CompanionServer, params: t.DidCloseTextDocumentParams) -> None:
    uri = normalize_uri(params.text_document.uri)
    ls.when_booted(lambda c: _opened_or_closed(ls, c, uri, opened=False))


def _opened_or_closed(ls: CompanionServer, companion: Companion, uri: str, *, opened: bool) -> None:
    """The open files changed: the companion's state, then a push, the file's diagnostics, Gemini."""
    if opened:
        companion.did_open(uri)
    else:
        companion.did_close(uri)
    ls.publisher.schedule(OPEN_FILES_CHANGED, [uri_to_path(uri)])
    if opened:
        ls.diagnostics.publish(uri)
    else:
        ls.diagnostics.clear(uri)
    ls.gemini.schedule_update()


def did_change_cursor(ls: CompanionServer, params: Any) -> None:
    uri, position, selections = ls.parse_cursor(params)
    companion = ls.companion
    if companion is None:
        ls.when_booted(lambda c: _cursor_moved(ls, c, uri, position, selections))
    else:  # the hot path: no closure per message
        _cursor_moved(ls, companion, uri, position, selections)


def _cursor_moved(
    ls: CompanionServer,
    companion: Companion,
    uri: str,
    position: RawPosition,
    selections: list[tuple[RawPosition, RawPosition]],
) -> None:
    if companion.did_change_cursor(uri, position, selections):
        ls.publisher.schedule(OPEN_FILES_CHANGED)  # the active file feeds JIT memory and rules
    ls.gemini.schedule_update()
    ls.claude_code.cursor_moved()


HANDLERS: tuple[tuple[str, Callable[..., Any]], ...] = (
    (t.TEXT_DOCUMENT_DID_OPEN, did_open),
    (t.TEXT_DOCUMENT_DID_CHANGE, did_change),
    (t.TEXT_DOCUMENT_DID_CLOSE, did_close),
    (DID_CHANGE_CURSOR, did_change_cursor),
)
