"""Language features on memory and rule files: document links, hover, code lens.

The memory core computes them (:meth:`MemoryStore.analyze`, positions in code points);
:func:`~.diagnostics.open_file_analysis` converts positions to the negotiated encoding; this module speaks
LSP. Diagnostics on the same files: :mod:`.diagnostics`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as t

from ..uris import normalize_uri
from .diagnostics import open_file_analysis

if TYPE_CHECKING:
    from .runtime import CompanionServer

# ---------------------------------------------------------------------- request handlers


def document_links(ls: CompanionServer, params: t.DocumentLinkParams) -> list[t.DocumentLink] | None:
    found = open_file_analysis(ls, normalize_uri(params.text_document.uri))
    if found is None:
        return None
    analysis, to_range = found
    return [
        t.DocumentLink(range=to_range(link.range), target=Path(link.target).as_uri(), tooltip=link.target)
        for link in analysis.links
    ]


def hover(ls: CompanionServer, params: t.HoverParams) -> t.Hover | None:
    found = open_file_analysis(ls, normalize_uri(params.text_document.uri))
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
    found = open_file_analysis(ls, normalize_uri(params.text_document.uri))
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
