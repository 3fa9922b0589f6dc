"""``@path`` imports in memory files: finding them and expanding them inline.

Syntax: ``@`` at the start of a line or after whitespace, followed by a path (``\\ `` escapes a
space). The path is relative to the importing file, ``~/``-relative or absolute. Not imports:
anything inside a backtick code span, a fenced code block or an HTML comment; URLs
(``@https://...``); words that do not look like paths (``@octocat``: a path has a ``/`` or a
``.``); trailing sentence punctuation is not part of the path.

Expansion never raises and never damages text: a token that does not resolve to an existing,
readable, allowed file keeps its characters byte for byte (``@pytest.fixture``, ``@org/pkg``).
Failures are recorded (``not found``, ``cycle``, ``outside allowed roots``, ``too deep``,
``excluded``, ``ignored``, or why the file was skipped) for the tokens meant as paths (see
:func:`looks_like_path`; ``@cline/llms`` is an npm scope, not a missing file), so the editor can
show them. Each file is inlined at most once per expansion: a repeat renders
nothing (and a line holding only that import disappears), which also bounds import bombs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..containment import realpath
from ..ownership import owned_by_other
from .paths import file_key, is_within
from .reading import ReadOutcome

NOT_FOUND = "not found"
CYCLE = "cycle"
OUTSIDE = "outside allowed roots"
TOO_DEEP = "too deep"
OVER_TOTAL = "over memory.maxTotalBytes"
EXCLUDED = "excluded by context.exclude"
IGNORED = "ignored by an ignore file"

FAILURE_CODES: dict[str, str] = {
    NOT_FOUND: "import-not-found",
    CYCLE: "import-cycle",
    OUTSIDE: "import-outside-roots",
    TOO_DEEP: "import-too-deep",
    OVER_TOTAL: "import-over-total",
    EXCLUDED: "import-excluded",
    IGNORED: "import-ignored",
}
_TEXT_EXTENSIONS = (".md", ".mdc", ".txt", ".markdown", ".rst")
# What a token ends in when it names a file someone means to import (a failure to import one is
# reported); "@pytest.fixture" or "@app.route" end in no such extension.
_FILE_EXTENSIONS = (
    *_TEXT_EXTENSIONS,
    *(".json", ".jsonc", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".xml", ".csv", ".html", ".sql"),
    *(".py", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".rb", ".php"),
    *(".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".sh", ".lua", ".vim"),
)
_PATH_STARTS = ("./", "../", "~/", "/")

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_BLOCK_MARKERS = ("```", "~~~", "<!--", "-->")  # what can hide a line's imports: fences and comments
_AT = re.compile("@")
_IMPORT = re.compile(r"(?:(?<=\s)|^)@((?:\\ |[^\s])+)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")
_TRAILING = ".,;:!?)]}\"'>*_"


@dataclass(frozen=True, slots=True)
class ImportRef:
    """One ``@path`` in a text: its line, the span of the whole token and the path as meant."""

    line: int
    start: int  # index of "@" in the line (code points)
    end: int  # end of the token (exclusive)
    path: str  # unescaped path as written, e.g. "docs/style.md"


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Spans of backtick code spans in one line (runs of n backticks closed by exactly n)."""
    spans: list[tuple[int, int]] = []
    i = 0
    n = len(line)
    while i < n:
        if line[i] != "`":
            i += 1
            continue
        j = i
        while j < n and line[j] == "`":
            j += 1
        run = j - i
        k = j
        close = -1
        while k < n:
            if line[k] == "`":
                m = k
                while m < n and line[m] == "`":
                    m += 1
                if m - k == run:
                    close = m
                    break
                k = m
            else:
                k += 1
        if close < 0:
            i = j  # an unmatched run is literal text
            continue
        spans.append((i, close))
        i = close
    return spans


def find_imports(text: str) -> list[ImportRef]:
    """Every import in ``text`` (not in code spans, fences or HTML comments), in order."""
    refs: list[ImportRef] = []
    if "@" not in text:
        return refs  # most imported files import nothing: no need to follow fences line by line
    if not any(marker in text for marker in _BLOCK_MARKERS):
        # No fence or comment anywhere: only the lines holding an "@" need looking at.
        for lineno, line in _lines_with(text, _AT):
            _line_refs(lineno, line, _code_spans(line), refs)
        return refs
    fence: tuple[str, int] | None = None
    in_comment = False
    for lineno, line in enumerate(text.split("\n")):
        if fence is not None:
            stripped = line.strip()
            char, length = fence
            indent = len(line) - len(line.lstrip(" "))
            if indent <= 3 and stripped and set(stripped) == {char} and len(stripped) >= length:
                fence = None
            continue
        m = _FENCE_OPEN.match(line) if ("```" in line or "~~~" in line) else None  # substring tests first: cheap
        if m and not in_comment:
            marker = m.group(1)
            if not (marker[0] == "`" and "`" in m.group(2)):
                fence = (marker[0], len(marker))
                continue
        if "@" not in line and "<!--" not in line and "-->" not in line:
            continue
        masked, in_comment = _comment_spans(line, in_comment)
        masked.extend(_code_spans(line))
        if "@" in line:
            _line_refs(lineno, line, masked, refs)
    return refs


def _comment_spans(line: str, in_comment: bool) -> tuple[list[tuple[int, int]], bool]:
    """Spans of ``line`` inside HTML comments (which may span lines), and whether one is still
    open at its end (``in_comment``: whether one was open at its start)."""
    masked: list[tuple[int, int]] = []
    pos = 0
    while pos <= len(line):
        if in_comment:
            close = line.find("-->", pos)
            if close < 0:
                masked.append((pos, len(line)))
                break
            masked.append((pos, close + 3))
            pos = close + 3
            in_comment = False
        else:
            opening = line.find("<!--", pos)
            if opening < 0:
                break
            in_comment = True
            pos = opening
    return masked, in_comment


def _lines_with(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """(0-based number, text) of each line of ``text`` where ``pattern`` matches, in order."""
    lineno = 0
    counted = 0  # lines counted up to this offset
    after = 0  # the end of the last line given
    for hit in pattern.finditer(text):
        if hit.start() < after:
            continue  # another hit on a line already given
        start = text.rfind("\n", 0, hit.start()) + 1
        end = text.find("\n", hit.start())
        if end < 0:
            end = len(text)
        lineno += text.count("\n", counted, start)
        counted = start
        after = end
        yield lineno, text[start:end]


def _line_refs(lineno: int, line: str, masked: list[tuple[int, int]], refs: list[ImportRef]) -> None:
    """Append the imports of one line (outside the ``masked`` spans) to ``refs``."""
    for match in _IMPORT.finditer(line):
        start = match.start()
        if any(a <= start < b for a, b in masked):
            continue
        raw = match.group(1)
        end = match.end()
        while raw and raw[-1] in _TRAILING and not raw.endswith("\\ "):
            raw = raw[:-1]
            end -= 1
        path = raw.replace("\\ ", " ")
        if not path or path.startswith("@"):
            continue
        if _SCHEME.match(path) or "://" in path:
            continue  # a URL, not a file
        if "/" not in path and "." not in path:
            continue  # @mention, @param ...: not a path
        refs.append(ImportRef(lineno, start, end, path))


def resolve_import(path: str, importing_file: str, home: str) -> str:
    """Absolute, normalised path an import names (symlinks not resolved)."""
    if path == "~" or path.startswith("~/"):
        full = os.path.join(home, path[2:])
    elif os.path.isabs(path):
        full = path
    else:
        full = os.path.join(os.path.dirname(importing_file), path)
    return os.path.normpath(full)


def looks_like_path(path: str, resolved: str) -> bool:
    """Whether a token that did not import was meant as a file path (then the failure is worth a
    diagnostic): it names something that exists (``resolved``), ends in a file extension, or
    starts like a path (``./``, ``../``, ``~/``, ``/``). ``@cline/llms``, ``@types/node`` (npm
    scopes), ``@pytest.fixture`` are prose."""
    if path.startswith(_PATH_STARTS) or path.lower().endswith(_FILE_EXTENSIONS):
        return True
    return os.path.lexists(resolved)


@dataclass(slots=True)
class ImportFailure:
    """A failed import (of a token that looks like a path) somewhere under one top-level ``@path``."""

    chain: tuple[str, ...]  # display paths from the top-level import down to the failing one
    path: str  # the path as written in the file that failed to import it
    reason: str

    @property
    def code(self) -> str:
        return FAILURE_CODES.get(self.reason, "import-failed")


@dataclass(slots=True)
class ImportOutcome:
    """What became of one top-level import of a text."""

    ref: ImportRef
    resolved: str  # absolute path (not resolved through symlinks)
    failure: str | None  # reason when this import itself failed
    content: str = ""  # its expanded content (empty on failure and for a repeat)
    nested: list[ImportFailure] = field(default_factory=list)  # failures deeper down
    duplicate_of: str | None = None  # display path of the earlier inclusion, for a repeat


@dataclass(slots=True)
class Expansion:
    text: str
    deps: set[str]  # every path an import tried (so a change to any of them re-renders)
    outcomes: list[ImportOutcome]
    failures: list[ImportFailure]  # failures of path-like tokens, top-level and nested
    repeats: list[tuple[str, str]] = field(default_factory=list)  # (path as written, display of first)
    included: dict[str, str] = field(default_factory=dict)  # file key → display, in inclusion order
    inlined: int = 0  # characters inlined so far (bounded by ExpandOptions.max_bytes)


def _allow_all(_path: str) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class ExpandOptions:
    """How imports of one file are expanded: where targets may lie, how deep, how files are read."""

    roots: tuple[str, ...]  # real paths (symlinks resolved) a target must lie in
    home: str
    max_depth: int
    read: Callable[[str], ReadOutcome]  # the caller's cached reader
    display: Callable[[str], str]  # display path of an absolute path
    blocked: Callable[[str], str | None] = _allow_all  # why an absolute path may not be imported
    seen: tuple[tuple[str, str], ...] = ()  # (file key, display) already in the instruction (paths.file_key)
    max_bytes: int = 0  # memory.maxTotalBytes: inline no more than this in one expansion (0: no cap)
    key: Callable[[str], str] = file_key  # a real path's file key (the renderer's answers its stats once)
    # A file of another user (neither this user nor root) is imported only into a file the user's own
    # settings name (the global memory): a workspace file's imports are workspace files.
    any_owner: bool = False


@dataclass(slots=True)
class _Walk:
    """The state of one expansion: what was tried, included and what failed."""

    options: ExpandOptions
    result: Expansion


def expand_imports(text: str, file_path: str, options: ExpandOptions, real_path: str | None = None) -> Expansion:
    """Expand the imports of ``text`` (the content of ``file_path``); never raises."""
    real = real_path or os.path.realpath(file_path)
    result = Expansion("", set(), [], [], [], dict(options.seen))
    result.included.setdefault(options.key(real), options.display(file_path))
    walk = _Walk(options, result)
    result.text = _expand(walk, text, _Place(file_path, 1, (real,), (), result.outcomes))
    return result


@dataclass(frozen=True, slots=True)
class _Place:
    """Where an expansion stands: the file being expanded, how deep, the real paths above it (to
    find cycles), the display chain (for messages), and where outcomes go (the top level only)."""

    file_path: str
    depth: int
    stack: tuple[str, ...]
    chain: tuple[str, ...]
    outcomes: list[ImportOutcome] | None


def _expand(walk: _Walk, text: str, place: _Place) -> str:
    refs = find_imports(text)
    if not refs:
        return text
    lines: list[str | None] = list(text.split("\n"))
    by_line: dict[int, list[ImportRef]] = {}
    for ref in refs:
        by_line.setdefault(ref.line, []).append(ref)
    for lineno, line_refs in by_line.items():
        line = lines[lineno] or ""
        pieces: list[str] = []
        pos = 0
        for ref in line_refs:
            pieces.append(line[pos : ref.start])
            pieces.append(_one_import(walk, ref, line[ref.start : ref.end], place))
            pos = ref.end
        pieces.append(line[pos:])
        new = "".join(pieces)
        # A line that only repeated an included file goes away with it.
        lines[lineno] = None if not new.strip() and line.strip() else new
    return "\n".join(line for line in lines if line is not None)


def _one_import(walk: _Walk, ref: ImportRef, token: str, place: _Place) -> str:
    """The replacement text of one ``@path``: the target's content, "" for a repeat, else the token."""
    options, result = walk.options, walk.result
    resolved = resolve_import(ref.path, place.file_path, options.home)
    display = options.display(resolved)
    here = (*place.chain, display)
    nested_start = len(result.failures)
    real = realpath(resolved)
    key = options.key(real)  # a hard link is the same file as its other names
    failure, text = _target_text(walk, resolved, real, key, place.depth, place.stack)
    first = result.included.get(key) if failure is None else None
    content = ""
    if failure is None and first is None:
        result.included[key] = display
        inner = _Place(resolved, place.depth + 1, (*place.stack, real), here, None)
        content = _expand(walk, text or "", inner).rstrip("\n")
    if first is not None:
        result.repeats.append((ref.path, first))
    if failure is not None and looks_like_path(ref.path, resolved):
        result.failures.append(ImportFailure(here, ref.path, failure))
    if place.outcomes is not None:
        nested = result.failures[nested_start:] if failure is None else []
        place.outcomes.append(ImportOutcome(ref, resolved, failure, content, nested, first))
    if failure is not None:
        return token  # not a usable file: the text stays as written
    if first is not None:
        return ""
    return f"<!-- imported from: {display} -->\n{content}\n<!-- end of import: {display} -->"


def _target_text(
    walk: _Walk, resolved: str, real: str, key: str, depth: int, stack: tuple[str, ...]
) -> tuple[str | None, str | None]:
    """(failure, text) of an import target; exactly one of them is None."""
    options = walk.options
    if not is_within(real, options.roots):
        return OUTSIDE, None
    walk.result.deps.update((resolved, real))
    if real in stack:
        return CYCLE, None
    if key in walk.result.included:
        return None, ""  # a repeat: no need to read it again
    if depth > options.max_depth:
        return TOO_DEEP, None
    why = options.blocked(resolved) or (options.blocked(real) if real != resolved else None)
    if why is not None:
        return why, None
    outcome = options.read(real)
    if outcome.text is None:
        return (NOT_FOUND if outcome.missing else (outcome.skip or NOT_FOUND)), None
    if outcome.owner is not None and not options.any_owner:
        return owned_by_other(outcome.owner), None
    if options.max_bytes and walk.result.inlined + len(outcome.text) > options.max_bytes:
        return OVER_TOTAL, None  # bounded work: the token stays as written, with a diagnostic
    walk.result.inlined += len(outcome.text)
    return None, outcome.text
