"""Language features on memory and rule files: diagnostics, document links, hover, code lens.

The memory core computes them (:meth:`MemoryStore.analyze`, positions in code points); this
module converts positions to the negotiated encoding and speaks LSP. :class:`Diagnostics` owns
the debounce timers and the set of documents it published for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as t

from ..context.positions import units_from_column
from ..context.state import uri_to_path

if TYPE_CHECKING:
    from ..memory import FileAnalysis
    from .server import CompanionServer

log = logging.getLogger(__name__)

SEVERITY = {
    "error": t.DiagnosticSeverity.Error,
    "warning": t.DiagnosticSeverity.Warning,
    "information": t.DiagnosticSeverity.Information,
    "hint": t.DiagnosticSeverity.Hint,
}
PUBLISH_DELAY = 0.15  # seconds of quiet typing before diagnostics are recomputed

RangeOf = Callable[[Any], t.Range]


def _analysis(ls: CompanionServer, uri: str) -> tuple[FileAnalysis, RangeOf] | None:
    """The analysis of an open memory or rule file, and a converter of its ranges to LSP ranges."""
    companion = ls.companion
    if companion is None or not ls.ready.is_set() or not uri.startswith("file:"):
        return None
    path = Path(uri_to_path(uri))
    if not companion.memory.is_memory_document(path):
        return None
    try:
        doc = ls.workspace.get_text_document(uri)
    except Exception:
        return None
    # Not cached: the result depends on the files on disk and on which files are open, and the
    # analysis of one small Markdown file costs well under a millisecond.
    lines = doc.source.split("\n")
    encoding = companion.snapshot.position_encoding
    return companion.memory.analyze(path, doc.source), lambda rng: _range(lines, rng, encoding)


def _position(lines: list[str], pos: Any, encoding: str) -> t.Position:
    text = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    return t.Position(line=pos.line, character=units_from_column(text.rstrip("\r"), pos.character, encoding))


def _range(lines: list[str], rng: Any, encoding: str) -> t.Range:
    return t.Range(start=_position(lines, rng.start, encoding), end=_position(lines, rng.end, encoding))


class Diagnostics:
    def __init__(self, server: CompanionServer) -> None:
        self._server = server
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._published: set[str] = set()  # open memory/rule documents we published diagnostics for
        self._waiting: set[asyncio.Task[None]] = set()

    def publish(self, uri: str) -> None:
        """Compute and publish diagnostics for an open memory or rule file (no-op for other files)."""
        ls = self._server
        if not ls.ready.is_set():
            task = asyncio.ensure_future(self._publish_when_ready(uri))
            self._waiting.add(task)
            task.add_done_callback(self._waiting.discard)
            return
        try:
            found = _analysis(ls, uri)
        except Exception:
            log.exception("analysing %s failed", uri)
            return
        if found is None:
            self.clear(uri)  # it may no longer be a memory or rule file (e.g. settings changed)
            return
        analysis, to_range = found
        diagnostics = [
            t.Diagnostic(
                range=to_range(d.range),
                message=d.message,
                severity=SEVERITY.get(d.severity, t.DiagnosticSeverity.Warning),
                code=d.code,
                source="context-companion",
            )
            for d in analysis.diagnostics
        ]
        self._published.add(uri)
        self._server.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    async def _publish_when_ready(self, uri: str) -> None:
        await self._server.ready.wait()
        self.publish(uri)

    def schedule(self, uri: str, *, recheck: bool = False) -> None:
        """Debounced :meth:`publish`. Called on every change of every document, so it returns at once
        for documents that are not memory or rule files, unless ``recheck`` (memory changed on disk)."""
        if uri not in self._published and not (recheck and uri.startswith("file:")):
            return
        old = self._timers.pop(uri, None)
        if old is not None:
            old.cancel()
        self._timers[uri] = asyncio.get_running_loop().call_later(PUBLISH_DELAY, self._fire, uri)

    def _fire(self, uri: str) -> None:
        self._timers.pop(uri, None)
        self.publish(uri)

    def recheck_open(self) -> None:
        """Memory changed on disk: every open document may have become (or stopped being) a memory file."""
        companion = self._server.companion
        if companion is not None:
            for uri in companion.editor.open_uris():
                self.schedule(uri, recheck=True)

    def clear(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        if uri in self._published:
            self._published.discard(uri)
            self._server.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


# ---------------------------------------------------------------------- request handlers


def document_links(ls: CompanionServer, params: t.DocumentLinkParams) -> list[t.DocumentLink] | None:
    found = _analysis(ls, params.text_document.uri)
    if found is None:
        return None
    analysis, to_range = found
    return [
        t.DocumentLink(range=to_range(link.range), target=Path(link.target).as_uri(), tooltip=link.target)
        for link in analysis.links
    ]


def hover(ls: CompanionServer, params: t.HoverParams) -> t.Hover | None:
    found = _analysis(ls, params.text_document.uri)
    if found is None:
        return None
    analysis, to_range = found
    at = (params.position.line, params.position.character)
    for h in analysis.hovers:
        rng = to_range(h.range)
        if (rng.start.line, rng.start.character) <= at <= (rng.end.line, rng.end.character):
            return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=h.markdown), range=rng)
    return None


def code_lens(ls: CompanionServer, params: t.CodeLensParams) -> list[t.CodeLens] | None:
    found = _analysis(ls, params.text_document.uri)
    if found is None:
        return None
    analysis, to_range = found
    if analysis.lens is None:
        return []
    # A lens with a title only (no command to run): clients show it as a label.
    return [t.CodeLens(range=to_range(analysis.lens.range), command=t.Command(title=analysis.lens.title, command=""))]


HANDLERS: tuple[tuple[str, Callable[..., Any]], ...] = (
    (t.TEXT_DOCUMENT_DOCUMENT_LINK, document_links),
    (t.TEXT_DOCUMENT_HOVER, hover),
    (t.TEXT_DOCUMENT_CODE_LENS, code_lens),
)
