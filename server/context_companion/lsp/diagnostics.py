"""Diagnostics on open memory and rule files: :class:`Diagnostics` owns the debounce timers and the
set of documents it published for; :func:`open_file_analysis` is the memory core's analysis of an open file
with its ranges converted to the negotiated position encoding (the language features of
:mod:`.memory_files` use it too).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as t

from ..context.positions import units_from_column
from .texts import OpenTexts

if TYPE_CHECKING:
    from ..memory import FileAnalysis
    from .host import Host

log = logging.getLogger(__name__)

SEVERITY = {
    "error": t.DiagnosticSeverity.Error,
    "warning": t.DiagnosticSeverity.Warning,
    "information": t.DiagnosticSeverity.Information,
    "hint": t.DiagnosticSeverity.Hint,
}
PUBLISH_DELAY = 0.15  # seconds of quiet typing before diagnostics are recomputed

RangeOf = Callable[[Any], t.Range]


def open_file_analysis(ls: Host, uri: str) -> tuple[FileAnalysis, RangeOf] | None:
    """The analysis of an open memory or rule file, and a converter of its ranges to LSP ranges."""
    from ..uris import uri_to_path

    companion = ls.companion
    if companion is None or not ls.ready.is_set() or not uri.startswith("file:"):
        return None
    path = Path(uri_to_path(uri))
    if not companion.memory.is_memory_document(path):
        return None
    text = OpenTexts(ls).get(uri)  # the editor's text; never a read from disk on the loop
    if text is None:
        return None
    # Not cached: the result depends on the files on disk and on which files are open, and the
    # analysis of one small Markdown file costs well under a millisecond.
    lines = text.split("\n")
    encoding = companion.snapshot.position_encoding
    return companion.memory.analyze(path, text), lambda rng: _range(lines, rng, encoding)


def _position(lines: list[str], pos: Any, encoding: str) -> t.Position:
    text = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    return t.Position(line=pos.line, character=units_from_column(text.rstrip("\r"), pos.character, encoding))


def _range(lines: list[str], rng: Any, encoding: str) -> t.Range:
    return t.Range(start=_position(lines, rng.start, encoding), end=_position(lines, rng.end, encoding))


class Diagnostics:
    def __init__(self, server: Host) -> None:
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
            found = open_file_analysis(ls, uri)
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
