"""Editor state: open documents (most recently used first), the active document, cursor, selections.

Positions are stored as the client sent them (in the negotiated position encoding) and turned
into code points only when a turn context is asked for, so the cursor notification, which
arrives on every keystroke, costs a dictionary update and nothing more.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..exclusion import exclude_matcher
from ..redaction import redact_secrets
from ..uris import uri_to_path as uri_to_path  # its old home: other modules import it from here
from .positions import clamp_position, column_from_units, split_lines, units_from_column

if TYPE_CHECKING:
    from ..settings import ContextSettings

log = logging.getLogger(__name__)
_UNOPENED_TOLD = 256  # URIs remembered as already told (a bound, not a setting)

TRUNCATION_MARK = "... [TRUNCATED]"
_REDACT_MARGIN = 4096  # longer than any credential shape the redactor knows, except key blocks


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class RawPosition:
    line: int
    character: int


@dataclass(slots=True)
class CursorState:
    uri: str
    position: RawPosition
    selections: tuple[tuple[RawPosition, RawPosition], ...] = ()


@dataclass(frozen=True, slots=True)
class ActiveFile:
    path: str
    cursor: tuple[int, int] | None = None  # 1-based (line, character) for the model
    selected_text: str | None = None
    context_lines: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.cursor is not None:
            out["cursor"] = {"line": self.cursor[0], "character": self.cursor[1]}
        if self.selected_text:
            out["selectedText"] = self.selected_text
        if self.context_lines is not None:
            out["contextLines"] = self.context_lines
        return out


@dataclass(frozen=True, slots=True)
class TurnState:
    """What the model is told about the editor at one moment."""

    active: ActiveFile | None
    others: tuple[str, ...]  # other open files, most recently used first

    def to_full(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.active is not None:
            out["activeFile"] = self.active.to_wire()
        out["otherOpenFiles"] = list(self.others)
        return out

    @property
    def open_paths(self) -> tuple[str, ...]:
        return ((self.active.path,) if self.active else ()) + self.others


@dataclass(frozen=True, slots=True)
class EditorSelection:
    """The active document's selection as an editor reports it: 0-based lines, characters in
    UTF-16 code units (VS Code's positions), the selected text (redacted, capped); start == end
    when only the cursor is there."""

    uri: str
    path: str
    text: str
    start: tuple[int, int]
    end: tuple[int, int]

    @property
    def is_empty(self) -> bool:
        return self.start == self.end


@dataclass(slots=True)
class _Doc:
    uri: str
    path: str


class EditorState:
    """Open documents and the cursor. Mutated by the protocol layer, read by turn-context builds."""

    def __init__(self, settings: ContextSettings) -> None:
        self._docs: OrderedDict[str, _Doc] = OrderedDict()  # MRU first
        self._focused_ms: dict[str, int] = {}  # uri → when it last came to the front (epoch ms)
        self._unopened_told: OrderedDict[str, None] = OrderedDict()  # cursors on documents never opened, told once
        self.cursor: CursorState | None = None
        self.version = 0  # bumps on every change: cheap "did anything change" checks
        self.update_settings(settings)

    def update_settings(self, settings: ContextSettings) -> None:
        self.settings = settings
        self._exclude = exclude_matcher(tuple(settings.exclude))
        self.version += 1

    # ------------------------------------------------------------------ mutation

    def open(self, uri: str) -> None:
        doc = self._docs.pop(uri, None) or _Doc(uri, uri_to_path(uri))
        self._docs[uri] = doc
        self._docs.move_to_end(uri, last=False)
        self._focused_ms[uri] = _now_ms()
        self.version += 1

    def close(self, uri: str) -> None:
        if self._docs.pop(uri, None) is not None:
            self.version += 1
        self._focused_ms.pop(uri, None)
        if self.cursor is not None and self.cursor.uri == uri:
            self.cursor = None

    def set_cursor(
        self, uri: str, position: RawPosition, selections: Sequence[tuple[RawPosition, RawPosition]] = ()
    ) -> None:
        """Make ``uri`` the active document with this cursor (and selections)."""
        previous = self.cursor.uri if self.cursor is not None else None
        self.cursor = CursorState(uri, position, tuple(selections))
        if uri in self._docs:
            self._docs.move_to_end(uri, last=False)
            if previous != uri:  # a focus change, not a keystroke: no clock read per cursor move
                self._focused_ms[uri] = _now_ms()
        elif previous != uri:
            self._tell_unopened(uri)
        self.version += 1

    def _tell_unopened(self, uri: str) -> None:
        """A cursor in a document the editor never opened (or opened under another URI): the turn can
        give only its path, no cursor text, selection or context lines. Said once per URI, so that a
        client whose URIs do not match its didOpen ones shows in the log instead of failing silently."""
        if uri in self._unopened_told:
            return
        self._unopened_told[uri] = None
        if len(self._unopened_told) > _UNOPENED_TOLD:
            self._unopened_told.popitem(last=False)
        log.warning(
            "cursor in %s, which is not an open document (no didOpen for this URI): the turn gives only its path", uri
        )

    # ------------------------------------------------------------------ reading

    def is_open(self, uri: str) -> bool:
        return uri in self._docs

    def open_uris(self) -> list[str]:
        return list(self._docs)

    def focused_ms(self, uri: str) -> int:
        """When ``uri`` last became the front document (epoch milliseconds; 0 when not open)."""
        return self._focused_ms.get(uri, 0)

    def open_paths(self) -> list[str]:
        """Paths of every open document, MRU first (for memory JIT tiers and rules)."""
        return [d.path for d in self._docs.values()]

    def active_uri(self) -> str | None:
        """The document with the cursor, else the most recently opened one."""
        if self.cursor is not None:
            return self.cursor.uri
        return next(iter(self._docs)) if self._docs else None

    def active_path(self) -> str | None:
        uri = self.active_uri()
        return uri_to_path(uri) if uri is not None else None

    def is_excluded(self, uri_or_path: str) -> bool:
        """Whether a document (URI of any scheme, or a path) matches ``context.exclude``."""
        return self._exclude.matches_uri(uri_or_path)

    def _clean(self, text: str) -> str:
        return redact_secrets(text) if self.settings.redact_secrets else text

    def clean(self, text: str) -> str:
        """``text`` with credential shapes redacted when ``context.redactSecrets`` is on."""
        return self._clean(text)

    def snapshot(self, text_of: Callable[[str], str | None], encoding: str = "utf-16") -> TurnState:
        """The editor state as the model sees it. ``text_of(uri)`` gives an open document's text."""
        s = self.settings
        active: ActiveFile | None = None
        active_uri: str | None = None
        if self.cursor is not None:
            active_uri = self.cursor.uri
            active = self._active_entry(self.cursor, text_of, encoding)
        elif self._docs:
            first = next(iter(self._docs.values()))
            active_uri = first.uri
            active = ActiveFile(path=self._clean(first.path))
        others = [self._clean(d.path) for d in self._docs.values() if d.uri != active_uri]
        limit = max(s.max_open_files - (1 if active is not None else 0), 0)
        return TurnState(active, tuple(others[:limit]))

    def _active_entry(self, cur: CursorState, text_of: Callable[[str], str | None], encoding: str) -> ActiveFile:
        path = self._clean(uri_to_path(cur.uri))
        text = text_of(cur.uri) if cur.uri in self._docs else None
        if text is None:
            return ActiveFile(path=path)  # not open: only its path
        lines = split_lines(text)
        line, char = self._to_code_points(lines, cur.position, encoding)
        if self.is_excluded(cur.uri):
            return ActiveFile(path=path, cursor=(line + 1, char + 1))
        selected = self._selected_text(lines, cur.selections, encoding)
        context = None
        n = self.settings.cursor_context_lines
        if n > 0:
            start = max(line - n, 0)
            end = min(line + n, len(lines) - 1)
            context = {
                "startLine": start + 1,
                "endLine": end + 1,
                "text": self._clean("\n".join(lines[start : end + 1])),
            }
        return ActiveFile(path=path, cursor=(line + 1, char + 1), selected_text=selected, context_lines=context)

    def selection(self, text_of: Callable[[str], str | None], encoding: str = "utf-16") -> EditorSelection | None:
        """The active open document's primary selection (or cursor), or None when there is no
        active open document, or it matches ``context.exclude`` (a secret file is never described)."""
        cur = self.cursor
        if cur is None or cur.uri not in self._docs or self.is_excluded(cur.uri):
            return None
        text = text_of(cur.uri)
        if text is None:
            return None
        lines = split_lines(text)
        start, end = cur.selections[0] if cur.selections else (cur.position, cur.position)
        a = self._to_code_points(lines, start, encoding)
        b = self._to_code_points(lines, end, encoding)
        if a > b:
            a, b = b, a
        selected = self._selected_text(lines, cur.selections, encoding) or ""

        def utf16(point: tuple[int, int]) -> tuple[int, int]:
            line = lines[point[0]] if point[0] < len(lines) else ""
            return point[0], units_from_column(line, point[1], "utf-16")

        return EditorSelection(cur.uri, self._clean(uri_to_path(cur.uri)), selected, utf16(a), utf16(b))

    @staticmethod
    def _to_code_points(lines: list[str], pos: RawPosition, encoding: str) -> tuple[int, int]:
        line, units = clamp_position(len(lines), pos.line, pos.character)
        text = lines[line] if line < len(lines) else ""
        return line, column_from_units(text, units, encoding)

    def _selected_text(
        self, lines: list[str], selections: Sequence[tuple[RawPosition, RawPosition]], encoding: str
    ) -> str | None:
        parts: list[str] = []
        room = self.settings.max_selected_chars + _REDACT_MARGIN + 1  # what is built, at most: the rest is cut
        for start, end in selections:
            if room <= 0:
                break
            a = self._to_code_points(lines, start, encoding)
            b = self._to_code_points(lines, end, encoding)
            if a > b:
                a, b = b, a
            if a == b:
                continue
            if a[0] == b[0]:
                part = lines[a[0]][a[1] : b[1]]
            else:
                part = _span_text(lines, a, b, room)
            parts.append(part[:room])
            room -= len(part) + 1  # and the newline joining it to the next
        if not parts:
            return None
        text = "\n".join(parts)
        limit = self.settings.max_selected_chars
        # Redact before cutting (a credential across the cut is still seen whole), but never scan
        # more than a margin past the limit.
        cut = len(text) > limit + _REDACT_MARGIN
        text = self._clean(text[: limit + _REDACT_MARGIN])
        if cut or len(text) > limit:
            text = text[:limit] + TRUNCATION_MARK
        return text


@dataclass(slots=True)
class Baseline:
    """What one agent session last saw."""

    state: TurnState | None = None
    turns: int = 0


def _span_text(lines: list[str], a: tuple[int, int], b: tuple[int, int], room: int) -> str:
    """The text from ``a`` to ``b`` (line, column) over several lines, built only as far as ``room``
    characters: a huge selection is not copied whole only to be cut."""
    chunk = [lines[a[0]][a[1] :]]
    size = len(chunk[0])
    for i in range(a[0] + 1, b[0]):
        if size > room:
            return "\n".join(chunk)
        chunk.append(lines[i])
        size += len(lines[i]) + 1
    chunk.append(lines[b[0]][: b[1]])
    return "\n".join(chunk)
