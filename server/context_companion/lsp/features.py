"""Language features on memory and rule files: diagnostics, document links, hover, code lens.

The memory core computes them (:meth:`MemoryStore.analyze`, positions in code points); this
module converts positions to the negotiated encoding and speaks LSP.
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
}
PUBLISH_DELAY = 0.15  # seconds of quiet typing before diagnostics are recomputed

_timers: dict[str, asyncio.TimerHandle] = {}
_published: set[str] = set()  # open memory/rule documents we published diagnostics for


def _analysis(server: CompanionServer, uri: str) -> tuple[FileAnalysis, Callable[[Any], t.Range]] | None:
    """The analysis of an open memory or rule file, and a converter of its ranges to LSP ranges."""
    session = server.session
    if session is None or session.composer is None or not session.ready.is_set() or not uri.startswith("file:"):
        return None
    path = Path(uri_to_path(uri))
    memory = session.composer.memory
    if not memory.is_memory_document(path):
        return None
    try:
        doc = server.workspace.get_text_document(uri)
    except Exception:
        return None
    # Not cached: the result depends on the files on disk and on which files are open, and the
    # analysis of one small Markdown file costs well under a millisecond.
    lines = doc.source.split("\n")
    encoding = session.position_encoding
    return memory.analyze(path, doc.source), lambda rng: _range(lines, rng, encoding)


def _position(lines: list[str], pos: Any, encoding: str) -> t.Position:
    text = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    return t.Position(line=pos.line, character=units_from_column(text.rstrip("\r"), pos.character, encoding))


def _range(lines: list[str], rng: Any, encoding: str) -> t.Range:
    return t.Range(start=_position(lines, rng.start, encoding), end=_position(lines, rng.end, encoding))


def publish(server: CompanionServer, uri: str) -> None:
    """Compute and publish diagnostics for an open memory or rule file (no-op for other files)."""
    if not server.session.ready.is_set():
        asyncio.ensure_future(_publish_when_ready(server, uri))
        return
    try:
        found = _analysis(server, uri)
    except Exception:
        log.exception("analysing %s failed", uri)
        return
    if found is None:
        if uri in _published:  # no longer a memory or rule file (e.g. settings changed)
            _published.discard(uri)
            server.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
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
    _published.add(uri)
    server.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))


async def _publish_when_ready(server: CompanionServer, uri: str) -> None:
    await server.session.ready.wait()
    publish(server, uri)


def schedule_publish(server: CompanionServer, uri: str, *, recheck: bool = False) -> None:
    """Debounced :func:`publish`. Called on every change of every document, so it returns at once
    for documents that are not memory or rule files, unless ``recheck`` (memory changed on disk)."""
    if uri not in _published and not (recheck and uri.startswith("file:")):
        return
    old = _timers.pop(uri, None)
    if old is not None:
        old.cancel()
    loop = asyncio.get_running_loop()
    _timers[uri] = loop.call_later(PUBLISH_DELAY, lambda: (_timers.pop(uri, None), publish(server, uri)))


def clear(server: CompanionServer, uri: str) -> None:
    timer = _timers.pop(uri, None)
    if timer is not None:
        timer.cancel()
    if uri in _published:
        _published.discard(uri)
        server.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def register(server: CompanionServer) -> None:
    @server.feature(t.TEXT_DOCUMENT_DOCUMENT_LINK)
    def document_links(params: t.DocumentLinkParams) -> list[t.DocumentLink] | None:
        found = _analysis(server, params.text_document.uri)
        if found is None:
            return None
        analysis, to_range = found
        return [
            t.DocumentLink(range=to_range(link.range), target=Path(link.target).as_uri(), tooltip=link.target)
            for link in analysis.links
        ]

    @server.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(params: t.HoverParams) -> t.Hover | None:
        found = _analysis(server, params.text_document.uri)
        if found is None:
            return None
        analysis, to_range = found
        at = (params.position.line, params.position.character)
        for h in analysis.hovers:
            rng = to_range(h.range)
            if (rng.start.line, rng.start.character) <= at <= (rng.end.line, rng.end.character):
                return t.Hover(contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=h.markdown), range=rng)
        return None

    @server.feature(t.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(params: t.CodeLensParams) -> list[t.CodeLens] | None:
        found = _analysis(server, params.text_document.uri)
        if found is None:
            return None
        analysis, to_range = found
        if analysis.lens is None:
            return []
        # A lens with a title only (no command to run): clients show it as a label.
        return [
            t.CodeLens(range=to_range(analysis.lens.range), command=t.Command(title=analysis.lens.title, command=""))
        ]
