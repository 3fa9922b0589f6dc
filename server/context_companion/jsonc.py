"""JSON, and JSON with comments (JSONC), read with offsets and edited in place.

:func:`parse` reads the text as the agents whose files we edit read theirs: RFC 8259 JSON, plus
``//`` and ``/* */`` comments when ``comments=True`` (what Gemini CLI reads: strip-json-comments,
then ``JSON.parse``). It refuses, with the line and column, what some reader would take another
way or a rewrite would change: a trailing comma (``JSON.parse`` rejects it), a number out of a
double's range (JavaScript reads ``1e400`` as ``Infinity``), a lone surrogate (``\\ud800``, not
Unicode), a key written twice, nesting deeper than :data:`MAX_DEPTH`. With ``as_javascript`` it
reads those three as JavaScript's ``JSON.parse`` does instead (the last of two keys wins, ``1e400``
is infinite, a lone surrogate stays): what an agent written in JavaScript sees.

The edit functions return the smallest text changes (``(start, end, replacement)``, applied with
:func:`apply`) that add or take out one member of an object or one item of an array, or replace a
value, keeping every other byte: indentation, key order, blank lines, comments, line endings. An
item added after the last one goes on a line of its own when the last one has its own line
(indented like it), else after ``", "``; a new item of an empty container opens it over lines
indented one step (the file's own step) below the container, unless the whole document sits on
one line. Taking out an item is the exact inverse of adding it: added then removed gives back the
original bytes, provided an empty container was written ``{}`` or ``[]`` (what every formatter
writes) before. Comments are never removed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 128

Edit = tuple[int, int, str]

_BLANKS = " \t\n\r"
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"', re.DOTALL)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LITERALS = (("true", True), ("false", False), ("null", None))


class JsoncError(ValueError):
    """Why the text cannot be read, where: ``str()`` is ``line L, column C: reason``.

    ``code`` says what kind: ``syntax``, ``comment`` (comments where they are not allowed),
    ``trailing-comma``, ``duplicate-key``, ``number-range``, ``surrogate``, ``depth``."""

    def __init__(self, text: str, offset: int, code: str, reason: str) -> None:
        self.offset = offset
        self.line = text.count("\n", 0, offset) + 1
        self.column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        self.code = code
        self.reason = reason
        super().__init__(f"line {self.line}, column {self.column}: {reason}")


class Node:
    """One value: ``kind`` is ``object``, ``array``, ``string``, ``number``, ``true``, ``false`` or
    ``null``; ``[start, end)`` its text. An object keeps its members in order as ``keys``,
    ``key_starts`` (the offset of each key's opening quote) and ``children`` (their values)."""

    __slots__ = ("children", "end", "key_starts", "keys", "kind", "start", "value")

    def __init__(self, kind: str, start: int) -> None:
        self.kind = kind
        self.start = start
        self.end = start
        self.value: Any = None
        self.keys: list[str] = []
        self.key_starts: list[int] = []
        self.children: list[Node] = []

    def get(self, key: str) -> Node | None:
        """The value of the member ``key`` of an object (the last one, should it appear twice)."""
        for name, child in zip(reversed(self.keys), reversed(self.children), strict=True):
            if name == key:
                return child
        return None

    def index(self, key: str) -> int:
        """The position of member ``key`` among the object's members (-1: none)."""
        for i in range(len(self.keys) - 1, -1, -1):
            if self.keys[i] == key:
                return i
        return -1

    def span(self, i: int) -> tuple[int, int]:
        """The text of member or item ``i``: from its key (objects) or value start to the value's end."""
        start = self.key_starts[i] if self.kind == "object" else self.children[i].start
        return start, self.children[i].end

    def python(self) -> Any:
        """The value as Python data (for an object written with a key twice, the last one wins)."""
        if self.kind == "object":
            return {k: c.python() for k, c in zip(self.keys, self.children, strict=True)}
        if self.kind == "array":
            return [c.python() for c in self.children]
        return self.value


class Document:
    """A parsed text: its ``root`` value and the ``comments`` as ``(start, end)`` spans."""

    def __init__(self, text: str, root: Node, comments: list[tuple[int, int]]) -> None:
        self.text = text
        self.root = root
        self.comments = comments
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.unit = _indent_unit(text, root)

    def comments_in(self, start: int, end: int) -> bool:
        return any(a < end and b > start for a, b in self.comments)


def parse(text: str, *, comments: bool = False, as_javascript: bool = False) -> Document:
    """Read ``text`` (one JSON value with blanks, and comments when allowed, around it).
    Raises :class:`JsoncError`."""
    reader = _Reader(text, comments, as_javascript)
    i = reader.skip(0)
    if i == len(text):
        raise JsoncError(text, i, "syntax", "no JSON value (the text is empty)")
    root, i = reader.value(i, 0, "")
    i = reader.skip(i)
    if i != len(text):
        raise JsoncError(text, i, "syntax", f"unexpected {_shown(text, i)} after the JSON value")
    return Document(text, root, reader.comments)


def _shown(text: str, i: int) -> str:
    return "end of text" if i >= len(text) else repr(text[i])


def _where(path: str) -> str:
    return f"in {path}" if path else "at the top level"


class _Reader:
    def __init__(self, text: str, comments: bool, as_javascript: bool) -> None:
        self.text = text
        self.allow_comments = comments
        self.lenient = as_javascript
        self.comments: list[tuple[int, int]] = []

    def fail(self, i: int, code: str, reason: str) -> JsoncError:
        return JsoncError(self.text, i, code, reason)

    def skip(self, i: int) -> int:
        """The offset of the next token after blanks and comments."""
        text = self.text
        n = len(text)
        while i < n:
            c = text[i]
            if c in _BLANKS:
                i += 1
            elif c == "/" and text.startswith(("//", "/*"), i):
                if not self.allow_comments:
                    raise self.fail(i, "comment", "a comment, which plain JSON does not allow")
                if text[i + 1] == "/":
                    end = text.find("\n", i)
                    end = n if end < 0 else end - (text[end - 1] == "\r")
                else:
                    close = text.find("*/", i + 2)
                    if close < 0:
                        raise self.fail(i, "syntax", "a /* comment that is never closed")
                    end = close + 2
                self.comments.append((i, end))
                i = end
            else:
                break
        return i

    def value(self, i: int, depth: int, path: str) -> tuple[Node, int]:
        text = self.text
        c = text[i] if i < len(text) else ""
        if c == "{" or c == "[":
            if depth >= MAX_DEPTH:
                raise self.fail(i, "depth", f"nested deeper than {MAX_DEPTH} levels")
            return self.container(i, depth + 1, path)
        if c == '"':
            node = Node("string", i)
            node.value, node.end = self.string(i)
            return node, node.end
        if c == "-" or c.isdigit():
            return self.number(i)
        for word, literal in _LITERALS:
            if text.startswith(word, i):
                node = Node(word, i)
                node.value = literal
                node.end = i + len(word)
                return node, node.end
        raise self.fail(i, "syntax", f"expected a value, found {_shown(text, i)}")

    def container(self, i: int, depth: int, path: str) -> tuple[Node, int]:
        text = self.text
        is_object = text[i] == "{"
        close = "}" if is_object else "]"
        node = Node("object" if is_object else "array", i)
        seen: set[str] = set()
        i = self.skip(i + 1)
        if text.startswith(close, i):
            node.end = i + 1
            return node, node.end
        while True:
            if is_object:
                if not text.startswith('"', i):
                    raise self.fail(i, "syntax", f"expected a key in double quotes, found {_shown(text, i)}")
                key, after = self.string(i)
                if key in seen and not self.lenient:
                    raise self.fail(i, "duplicate-key", f"the key {json.dumps(key)} appears twice {_where(path)}")
                seen.add(key)
                node.keys.append(key)
                node.key_starts.append(i)
                i = self.skip(after)
                if not text.startswith(":", i):
                    raise self.fail(i, "syntax", f"expected ':' after the key {json.dumps(key)}")
                i = self.skip(i + 1)
                inner = f"{path}.{key}" if path else key
            else:
                inner = f"{path}[{len(node.children)}]"
            child, i = self.value(i, depth, inner)
            node.children.append(child)
            i = self.skip(i)
            if text.startswith(close, i):
                node.end = i + 1
                return node, node.end
            if not text.startswith(",", i):
                raise self.fail(i, "syntax", f"expected ',' or '{close}', found {_shown(text, i)}")
            comma = i
            i = self.skip(i + 1)
            if text.startswith(close, i):
                raise self.fail(comma, "trailing-comma", f"a trailing comma before '{close}'")

    def string(self, i: int) -> tuple[str, int]:
        match = _STRING.match(self.text, i)
        if match is None:
            raise self.fail(i, "syntax", "a string that is never closed on its line")
        token = match.group()
        try:
            value: str = json.loads(token)
        except json.JSONDecodeError as exc:
            at = i + exc.pos
            bad = self.text[at] if at < len(self.text) else ""
            if "control character" in exc.msg:
                reason = f"a control character U+{ord(bad):04X} in a string (write it as an escape)"
            elif "escape" in exc.msg:
                reason = f"a bad escape {self.text[at : at + 2]!r} in a string"
            else:
                reason = f"in a string: {exc.msg}"
            raise self.fail(at, "syntax", reason) from None
        lone = _SURROGATE.search(value)
        if lone is not None and not self.lenient:
            raise self.fail(
                i, "surrogate", f"a lone surrogate \\u{ord(lone.group()):04x} in a string (not Unicode text)"
            )
        return value, match.end()

    def number(self, i: int) -> tuple[Node, int]:
        match = _NUMBER.match(self.text, i)
        if match is None:
            raise self.fail(i, "syntax", f"expected a number, found {_shown(self.text, i)}")
        token = match.group()
        node = Node("number", i)
        node.end = match.end()
        if any(c in token for c in ".eE"):
            node.value = float(token)
            if math.isinf(node.value) and not self.lenient:
                raise self.fail(
                    i, "number-range", f"the number {token} is out of range (JavaScript reads it as Infinity)"
                )
        else:
            if len(token) > 4000:
                raise self.fail(i, "number-range", f"a number of {len(token)} digits")
            node.value = int(token)
        return node, node.end


def _indent_unit(text: str, root: Node) -> str:
    """The file's indentation step: the first container whose first item starts its own line
    gives it (that line's indent less the container's); two spaces when none does."""
    queue = [root]
    for node in queue:
        if node.children:
            first, _ = node.span(0)
            if _starts_line(text, first):
                outer = _indent_at(text, node.start)
                inner = _indent_at(text, first)
                if inner.startswith(outer) and len(inner) > len(outer):
                    return inner[len(outer) :]
        queue.extend(c for c in node.children if c.kind in ("object", "array"))
        if len(queue) > 10_000:
            break
    return "  "


def _line_start(text: str, i: int) -> int:
    return text.rfind("\n", 0, i) + 1


def _starts_line(text: str, i: int) -> bool:
    """Only spaces and tabs between the line's start and ``i`` (a line of its own)."""
    start = _line_start(text, i)
    return start > 0 and not text[start:i].strip(" \t")


def _indent_at(text: str, i: int) -> str:
    """The spaces and tabs that open the line holding ``i``."""
    start = _line_start(text, i)
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def render(value: Any, indent: str | None, unit: str = "  ", newline: str = "\n") -> str:
    """``value`` as JSON text: over lines (items at ``indent`` + ``unit``, the closing bracket at
    ``indent``), or on one line when ``indent`` is None. Empty containers are ``{}`` and ``[]``."""
    if isinstance(value, dict) and value:
        if indent is None:
            return "{" + ", ".join(f"{_scalar(k)}: {render(v, None)}" for k, v in value.items()) + "}"
        inner = indent + unit
        lines = [f"{inner}{_scalar(k)}: {render(v, inner, unit, newline)}" for k, v in value.items()]
        return "{" + newline + ("," + newline).join(lines) + newline + indent + "}"
    if isinstance(value, list) and value:
        if indent is None:
            return "[" + ", ".join(render(v, None) for v in value) + "]"
        inner = indent + unit
        lines = [inner + render(v, inner, unit, newline) for v in value]
        return "[" + newline + ("," + newline).join(lines) + newline + indent + "]"
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def apply(text: str, edits: list[Edit]) -> str:
    """``text`` with the (non-overlapping) edits made."""
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _expands(doc: Document) -> bool:
    """Whether a new item of an empty container goes over lines: unless the document is one line
    with something in it (a compact file stays compact)."""
    root = doc.root
    return not root.children or "\n" in doc.text[root.start : root.end]


def _line_end_after(doc: Document, i: int) -> int:
    """Where a new line goes after the item ending at ``i``: before the newline that ends its
    line when only blanks and comments of that line follow it, else ``i``."""
    text = doc.text
    j = i
    while j < len(text):
        if text[j] in " \t":
            j += 1
        elif text.startswith("\r\n", j) or text[j] == "\n":
            return j
        elif text.startswith(("//", "/*"), j):
            end = next((b for a, b in doc.comments if a == j), None)
            if end is None or "\n" in text[j:end]:
                return i
            j = end
        else:
            return i
    return i


def _member_text(key: str | None, value: Any, indent: str | None, doc: Document) -> str:
    shown = render(value, indent, doc.unit, doc.newline)
    return shown if key is None else f"{_scalar(key)}: {shown}"


def _add(doc: Document, container: Node, key: str | None, value: Any) -> list[Edit]:
    text, nl = doc.text, doc.newline
    if container.children:
        last_start, last_end = container.span(len(container.children) - 1)
        if _starts_line(text, last_start):
            indent = text[_line_start(text, last_start) : last_start]
            at = _line_end_after(doc, last_end)
            line = nl + indent + _member_text(key, value, indent, doc)
            if at == last_end:
                return [(last_end, last_end, "," + line)]
            return [(last_end, last_end, ","), (at, at, line)]
        return [(last_end, last_end, ", " + _member_text(key, value, None, doc))]
    inside, close = container.start + 1, container.end - 1
    if not doc.comments_in(inside, close):
        if not _expands(doc):
            return [(inside, close, _member_text(key, value, None, doc))]
        outer = _indent_at(text, container.start)
        inner = outer + doc.unit
        return [(inside, close, nl + inner + _member_text(key, value, inner, doc) + nl + outer)]
    # Only comments inside: the new item on a line of its own after the last line break, or
    # after the last comment.
    last_newline = text.rfind("\n", inside, close)
    if last_newline >= 0 and not doc.comments_in(last_newline, last_newline + 1):
        at = last_newline - (text[last_newline - 1] == "\r")
        inner = _indent_at(text, container.start) + doc.unit
        return [(at, at, nl + inner + _member_text(key, value, inner, doc))]
    at = max(b for a, b in doc.comments if inside <= a < close)
    return [(at, at, " " + _member_text(key, value, None, doc))]


def add_member(doc: Document, obj: Node, key: str, value: Any) -> list[Edit]:
    """Edits that add ``"key": value`` after the object's last member."""
    if obj.kind != "object":
        raise TypeError("add_member needs an object")
    return _add(doc, obj, key, value)


def add_item(doc: Document, array: Node, value: Any) -> list[Edit]:
    """Edits that add ``value`` after the array's last item."""
    if array.kind != "array":
        raise TypeError("add_item needs an array")
    return _add(doc, array, None, value)


def replace(doc: Document, node: Node, value: Any) -> list[Edit]:
    """Edits that put ``value`` where ``node`` is (over lines, indented like the node's line, when
    the document is over lines)."""
    indent = _indent_at(doc.text, node.start) if "\n" in doc.text[doc.root.start : doc.root.end] else None
    return [(node.start, node.end, render(value, indent, doc.unit, doc.newline))]


def _comma_after(doc: Document, i: int) -> int:
    """The offset of the comma that follows an item ending at ``i`` (blanks and comments between)."""
    text = doc.text
    j = i
    while j < len(text):
        if text[j] in _BLANKS:
            j += 1
            continue
        end = next((b for a, b in doc.comments if a == j), None)
        if end is None:
            break
        j = end
    if not text.startswith(",", j):
        raise ValueError(f"no comma after offset {i}")
    return j


def _after_blanks(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def remove(doc: Document, container: Node, index: int) -> list[Edit]:
    """Edits that take out member or item ``index`` with its comma and the blanks that came with
    it, keeping every comment."""
    text = doc.text
    count = len(container.children)
    start, end = container.span(index)
    if count == 1:
        inside, close = container.start + 1, container.end - 1
        if not doc.comments_in(inside, close):
            return [(inside, close, "")]
        after = _after_blanks(text, end)
        if _starts_line(text, start) and (text.startswith(("\n", "\r\n"), after)):
            return [(_line_start(text, start), after + (2 if text[after] == "\r" else 1), "")]
        return [(start - (text[start - 1] == " "), end, "")]
    if index == count - 1:
        _, before_end = container.span(index - 1)
        comma = _comma_after(doc, before_end)
        if _starts_line(text, start):
            after = _after_blanks(text, end)
            newline = _line_start(text, start) - 1
            newline -= newline > 0 and text[newline - 1] == "\r"
            rest_blank = after == len(text) or text.startswith(("\n", "\r\n"), after)
            if rest_blank or not any(b == newline and text.startswith("//", a) for a, b in doc.comments):
                return [(comma, comma + 1, ""), (newline, end, "")]
            # Joining the lines would put what follows the item into the line comment before it:
            # that stays on its own line, indented.
            return [(comma, comma + 1, ""), (start, after, "")]
        if not doc.comments_in(before_end, start):
            return [(before_end, end, "")]
        return [(comma, comma + 1, ""), (start, end, "")]
    next_start, _ = container.span(index + 1)
    comma = _comma_after(doc, end)
    after = _after_blanks(text, comma + 1)
    if _starts_line(text, start) and text.startswith(("\n", "\r\n"), after) and not doc.comments_in(end, comma):
        return [(_line_start(text, start), after + (2 if text[after] == "\r" else 1), "")]
    if not doc.comments_in(start, next_start):
        return [(start, next_start, "")]
    return [(start, end, ""), (comma, after, "")]
