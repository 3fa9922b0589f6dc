"""One ignore file: gitignore pattern parsing and matching (:class:`IgnoreFile`), and
:func:`load_ignore_file`, which reads and compiles a file once per version (cached by path and stat).
See the package docstring for the rules."""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass

log = logging.getLogger(__name__)

IGNORE_FILE_NAMES: tuple[str, ...] = (".gitignore", ".context-companion-ignore")
ALWAYS_PRUNED: frozenset[str] = frozenset({".git"})
DEFAULT_MAX_PATTERNS = 10_000
SETTING_NAME = "memory.maxIgnorePatterns"

_GLOB_SPECIAL = frozenset("*?[\\")
_CHUNK = 256  # patterns per combined regex: small enough to find the winner fast after a hit


# --------------------------------------------------------------------------- one pattern


def _trim_trailing_spaces(line: str) -> str:
    """Drop trailing spaces unless escaped with a backslash (git's rule; tabs stay)."""
    end = len(line)
    while end > 0 and line[end - 1] == " ":
        backslashes = 0
        i = end - 2
        while i >= 0 and line[i] == "\\":
            backslashes += 1
            i -= 1
        if backslashes % 2:
            break
        end -= 1
    return line[:end]


_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "\\x21-\\x7e",
    "lower": "a-z",
    "print": "\\x20-\\x7e",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9a-fA-F",
}


def _bracket(pat: str, i: int) -> tuple[str, int] | None:
    """Translate the bracket expression starting at ``pat[i] == "["``: (regex, index after it).

    None when the expression is malformed: git then matches nothing with the whole pattern.
    """
    n = len(pat)
    i += 1
    negated = i < n and pat[i] in "!^"
    if negated:
        i += 1
    parts: list[str] = []
    prev: str | None = None  # the previous single character (a range may start there)
    first = True
    while True:
        if i >= n:
            return None
        c = pat[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "\\":
            i += 1
            if i >= n:
                return None
            parts.append(re.escape(pat[i]))
            prev = pat[i]
        elif c == "-" and prev is not None and i + 1 < n and pat[i + 1] != "]":
            i += 2 if pat[i + 1] == "\\" else 1  # the range's end, escaped or not
            if i >= n:
                return None
            if prev <= pat[i]:  # the start stays in the set on its own, as in git
                parts.append(f"{re.escape(prev)}-{re.escape(pat[i])}")
            prev = None
        elif c == "[" and i + 1 < n and pat[i + 1] == ":":
            found = _posix_class(pat, i)
            if found is None:
                return None
            part, prev, i = found
            parts.append(part)
        else:
            parts.append(re.escape(c))
            prev = c
        i += 1
    body = "".join(parts)
    if negated:
        return f"[^/{body}]", i
    return (f"(?!/)[{body}]" if body else "(?!)"), i


def _posix_class(pat: str, i: int) -> tuple[str, str | None, int] | None:
    """A ``[:name:]`` at ``pat[i]`` inside a bracket expression: (regex part, the character a range
    may start from, index of its last character); None when malformed (or an unknown class)."""
    close = pat.find("]", i + 2)
    if close < 0:
        return None
    if pat[close - 1] != ":" or close - 1 < i + 2:
        return re.escape("["), "[", i  # no ":]": a plain "["
    cls = _POSIX_CLASSES.get(pat[i + 2 : close - 1])
    if cls is None:
        return None
    return cls, None, close


def _translate(pat: str) -> str | None:
    """The regex for git's wildmatch of ``pat`` with slashes special; None if it never matches."""
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            j = i
            while j < n and pat[j] == "*":
                j += 1
            if j - i >= 2 and (i == 0 or pat[i - 1] == "/") and (j == n or pat[j] == "/"):
                if j == n:
                    out.append(".*")  # trailing "**": everything
                else:
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    j += 1
            else:
                out.append("[^/]*")
            i = j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            translated = _bracket(pat, i)
            if translated is None:
                return None
            part, i = translated
            out.append(part)
        elif c == "\\":
            if i + 1 >= n:
                return None  # a trailing backslash never matches
            out.append(re.escape(pat[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@dataclass(slots=True)
class _Glob:
    index: int
    negated: bool
    dir_only: bool
    source: str  # regex text (fullmatch)
    compiled: re.Pattern[str] | None = None

    def fullmatch(self, text: str) -> bool:
        if self.compiled is None:
            self.compiled = re.compile(self.source, re.DOTALL)
        return self.compiled.fullmatch(text) is not None


class _Chunks:
    """Glob patterns in chunks, each with one combined regex that says "some pattern here matches"."""

    __slots__ = ("_chunks",)

    def __init__(self, globs: list[_Glob]) -> None:
        self._chunks: list[tuple[re.Pattern[str], list[_Glob]]] = []
        for start in range(0, len(globs), _CHUNK):
            part = globs[start : start + _CHUNK]
            combined = re.compile("|".join(f"(?:{g.source})" for g in part), re.DOTALL)
            self._chunks.append((combined, part))

    def best(self, text: str, is_dir: bool, above: int) -> _Glob | None:
        """The last pattern with an index above ``above`` that matches ``text``."""
        for combined, part in reversed(self._chunks):
            if part[-1].index <= above:
                return None
            if combined.fullmatch(text) is None:
                continue
            for glob in reversed(part):
                if glob.index <= above:
                    return None
                if (is_dir or not glob.dir_only) and glob.fullmatch(text):
                    return glob
        return None


_Literal = tuple[int, bool, bool]  # (index, negated, dir_only)


def _last_eligible(found: list[_Literal] | None, is_dir: bool, above: int) -> _Literal | None:
    if found:
        for item in reversed(found):
            if item[0] <= above:
                return None
            if is_dir or not item[2]:
                return item
    return None


class IgnoreFile:
    """The compiled patterns of one ignore file, matched against paths relative to its directory."""

    __slots__ = ("_by_name", "_by_path", "_by_suffix", "_names", "_paths", "_suffix_lengths", "dropped", "kept", "path")

    def __init__(self, lines: list[str], path: str = "", max_patterns: int = DEFAULT_MAX_PATTERNS) -> None:
        self.path = path
        self._by_name: dict[str, list[_Literal]] = {}  # no slash, no wildcard: the basename
        self._by_path: dict[str, list[_Literal]] = {}  # with a slash, no wildcard: the whole path
        self._by_suffix: dict[str, list[_Literal]] = {}  # "*.ext" without a slash: the basename's end
        name_globs: list[_Glob] = []
        path_globs: list[_Glob] = []
        count = 0
        dropped = 0
        for raw in lines:
            if not raw or raw[0] == "#":
                continue
            line = _trim_trailing_spaces(raw)
            if not line:
                continue
            if count >= max_patterns:
                dropped += 1
                continue
            count += 1
            negated = line[0] == "!"
            body = line[1:] if negated else line
            dir_only = body.endswith("/")
            if dir_only:
                body = body[:-1]
            anchored = "/" in body
            if anchored and body.startswith("/"):
                body = body[1:]
            if not body:
                continue
            literal: _Literal = (count, negated, dir_only)
            if _GLOB_SPECIAL.isdisjoint(body):
                (self._by_path if anchored else self._by_name).setdefault(body, []).append(literal)
                continue
            if not anchored and body[0] == "*" and _GLOB_SPECIAL.isdisjoint(body[1:]):
                self._by_suffix.setdefault(body[1:], []).append(literal)
                continue
            source = _translate(body)
            if source is not None:
                (path_globs if anchored else name_globs).append(_Glob(count, negated, dir_only, source))
        self.kept = count
        self.dropped = dropped
        self._suffix_lengths = sorted({len(s) for s in self._by_suffix}, reverse=True)
        self._names = _Chunks(name_globs) if name_globs else None
        self._paths = _Chunks(path_globs) if path_globs else None

    def __bool__(self) -> bool:
        return bool(self._by_name or self._by_path or self._by_suffix or self._names or self._paths)

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True (ignored) or False (re-included) by the last matching pattern; None: none matches.

        ``rel`` is the posix path relative to this file's directory, without a trailing slash.
        """
        slash = rel.rfind("/")
        name = rel[slash + 1 :] if slash >= 0 else rel
        best = _last_eligible(self._by_name.get(name), is_dir, 0)
        above = best[0] if best else 0
        if self._by_path:
            hit = _last_eligible(self._by_path.get(rel), is_dir, above)
            if hit is not None:
                best, above = hit, hit[0]
        for length in self._suffix_lengths:
            if length <= len(name):
                hit = _last_eligible(self._by_suffix.get(name[len(name) - length :]), is_dir, above)
                if hit is not None:
                    best, above = hit, hit[0]
        if self._names is not None:
            glob = self._names.best(name, is_dir, above)
            if glob is not None:
                best, above = (glob.index, glob.negated, glob.dir_only), glob.index
        if self._paths is not None:
            glob = self._paths.best(rel, is_dir, above)
            if glob is not None:
                best = (glob.index, glob.negated, glob.dir_only)
        return None if best is None else not best[1]

    def warning(self) -> str | None:
        if not self.dropped:
            return None
        return (
            f"{self.path}: only the first {self.kept:,} ignore patterns are applied ({SETTING_NAME}); "
            f"{self.dropped:,} more are not"
        )


# --------------------------------------------------------------------------- loading, cached


_CACHE: OrderedDict[tuple[str, int, int, int, int], IgnoreFile] = OrderedDict()
_CACHE_SIZE = 512
_CACHE_LOCK = threading.Lock()


def _split_lines(data: bytes) -> list[str]:
    """Lines as git reads them: split on LF, one CR before it dropped, a UTF-8 BOM skipped."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


MAX_IGNORE_FILE_BYTES = 16 * 1024 * 1024  # far past memory.maxIgnorePatterns of ordinary lines


def load_ignore_file(path: str, max_patterns: int = DEFAULT_MAX_PATTERNS, *, follow: bool = True) -> IgnoreFile | None:
    """The compiled ignore file at ``path``; None when missing, not a regular file or empty.

    ``follow=False`` refuses a symlink (ignore files inside the working tree, as git does).
    """
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    key = (path, st.st_mtime_ns, st.st_size, st.st_ino, max_patterns)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    if hit is None:
        try:
            with open(path, "rb") as fh:
                # As much as stat said (a read of the cap itself allocates the cap: 16 MiB taken
                # and given back per file, which left the C heap larger after each file read).
                data = fh.read(min(st.st_size, MAX_IGNORE_FILE_BYTES) + 1)
        except OSError:
            return None
        if len(data) > MAX_IGNORE_FILE_BYTES:  # bounded work: the rest is not read at all
            data = data[: data.rfind(b"\n", 0, MAX_IGNORE_FILE_BYTES) + 1]
            log.warning("%s: only its first %d MiB are read", path, MAX_IGNORE_FILE_BYTES >> 20)
        hit = IgnoreFile(_split_lines(data), path, max_patterns)
        if hit.dropped:
            log.warning("%s", hit.warning())
        with _CACHE_LOCK:
            _CACHE[key] = hit
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return hit if hit else None
