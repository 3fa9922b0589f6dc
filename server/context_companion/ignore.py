"""Gitignore-aware walking of a workspace folder, with git's whole chain of ignore sources.

One walker serves the memory index and the folder tree of the environment context, so both
agree on what is ignored. The verdict for a path is git's, without running git:

* the sources, highest precedence first: ``.gitignore`` (and ``.context-companion-ignore``, same
  syntax, read right after it) in the path's own directory, then in each directory above it up to
  the repository root, even above the workspace folder; then ``$GIT_DIR/info/exclude``; then the
  user's global excludes file (``core.excludesFile`` from git's config files, by default
  ``$XDG_CONFIG_HOME/git/ignore``). Within one file the last matching pattern wins;
* a file or directory inside an ignored directory is ignored, whatever a later negation says;
* the workspace folder itself and its ancestors are never judged: the user opened the folder, so
  it is walked even when git ignores it (as ripgrep treats a path it is given), but the patterns
  of every ancestor ignore file apply to what lies inside it;
* symlinked directories are never entered (so a symlink loop cannot trap the walk, and the
  walk never leaves the folder), and a symlinked ignore file inside the tree is not read (git
  does not follow those either);
* each ignore file contributes at most ``max_patterns`` patterns (``memory.maxIgnorePatterns``):
  the rest is dropped with a warning naming the file, so a huge file cannot stall the start;
* only directories are matched during the walk (to prune); callers match the few files they
  care about with :meth:`IgnoreRules.is_ignored`, which keeps the walk close to a bare
  ``os.scandir`` loop.

Patterns are compiled once per file version (cached by path and stat). Literal patterns
(``name``, ``/dir/file``, ``*.ext``) are looked up in dicts; the others are regular expressions
tried in chunks, so thousands of patterns cost little per path.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

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
                data = fh.read(MAX_IGNORE_FILE_BYTES + 1)
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


# --------------------------------------------------------------------------- git's other sources


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A working tree found above a folder: its top directory and its (common) git directory."""

    top: str
    git_dir: str  # where info/exclude and config live (the common dir of a linked worktree)


def find_repo(folder: str | os.PathLike[str]) -> GitRepo | None:
    """The nearest working tree holding ``folder`` (a ``.git`` directory or ``gitdir:`` file above)."""
    current = os.path.abspath(os.fspath(folder))
    while True:
        dot_git = os.path.join(current, ".git")
        if os.path.isdir(dot_git):
            return GitRepo(current, _common_dir(dot_git))
        if os.path.isfile(dot_git):
            git_dir = _read_gitdir_file(dot_git)
            if git_dir is not None:
                return GitRepo(current, _common_dir(git_dir))
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _read_gitdir_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline(4096).strip()  # "gitdir: <path>": one short line
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else None


def _common_dir(git_dir: str) -> str:
    """A linked worktree's git dir names the shared one in ``commondir``; info/ and config live there."""
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as fh:
            common = fh.readline().strip()
    except OSError:
        return git_dir
    return os.path.normpath(os.path.join(git_dir, common)) if common else git_dir


def _xdg_config_home() -> str:
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    return xdg if xdg else os.path.join(os.path.expanduser("~"), ".config")


def git_config_files(repo: GitRepo | None) -> list[str]:
    """The config files git reads, lowest precedence first (system, global, the repository's)."""
    files: list[str] = []
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if "GIT_CONFIG_GLOBAL" in os.environ:
        files.append(os.environ["GIT_CONFIG_GLOBAL"])
    else:
        files.append(os.path.join(_xdg_config_home(), "git", "config"))
        files.append(os.path.join(os.path.expanduser("~"), ".gitconfig"))
    if repo is not None:
        files.append(os.path.join(repo.git_dir, "config"))
    return files


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=?)")


def _config_value(text: str) -> str:
    """A git config value: quotes removed, escapes read, comments and trailing blanks dropped."""
    out: list[str] = []
    pending_space = ""
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(pending_space + {"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            pending_space = ""
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "#;":
            break
        elif not quoted and c.isspace():
            pending_space += c if out else ""
        else:
            out.append(pending_space + c)
            pending_space = ""
        i += 1
    return "".join(out)


def read_core_excludes_file(path: str) -> str | None:
    """The last ``core.excludesFile`` set in one git config file (None: not set there)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            raw_lines = fh.read(MAX_IGNORE_FILE_BYTES).split("\n")  # a git config: bounded like ignore files
    except OSError:
        return None
    lines: list[str] = []
    for raw in raw_lines:
        if lines and lines[-1].endswith("\\") and not lines[-1].endswith("\\\\"):
            lines[-1] = lines[-1][:-1] + raw  # a value continued on the next line
        else:
            lines.append(raw)
    value: str | None = None
    in_core = False
    for line in lines:
        rest = line
        section = _SECTION.match(rest)
        if section:
            in_core = section.group(1).lower() == "core" and section.group(2) is None
            rest = rest[section.end() :]
        if not in_core:
            continue
        key = _KEY.match(rest)
        if key and key.group(1).lower() == "excludesfile" and key.group(2):
            value = _config_value(rest[key.end() :])
    return value


def global_excludes_path(repo: GitRepo | None) -> str:
    """Where the user's global excludes file is: ``core.excludesFile`` or the XDG default."""
    configured: str | None = None
    for path in git_config_files(repo):
        value = read_core_excludes_file(path)
        if value is not None:
            configured = value
    if not configured:
        return os.path.join(_xdg_config_home(), "git", "ignore")
    if configured.startswith("~"):
        configured = os.path.expanduser(configured)
    if not os.path.isabs(configured):
        configured = os.path.join(repo.top if repo is not None else os.getcwd(), configured)
    return os.path.normpath(configured)


def _ancestor_dirs(top: str, folder: str) -> list[str]:
    """Directories from ``top`` down to the parent of ``folder`` (empty if folder is top)."""
    rel = os.path.relpath(folder, top)
    if rel == "." or rel.startswith(".."):
        return []
    parts = rel.split(os.sep)
    return [os.path.join(top, *parts[:i]) for i in range(len(parts))]


def ignore_sources(folder: str | os.PathLike[str]) -> list[Path]:
    """Files outside ``folder`` whose content changes verdicts inside it (they may not exist yet).

    The ignore files of every directory from the repository root down to the folder's parent,
    ``info/exclude``, the global excludes file and the git config files that can name it. A
    watcher that sees one of these change should re-walk the folder.
    """
    folder_abs = os.path.abspath(os.fspath(folder))
    repo = find_repo(folder_abs)
    out: list[str] = []
    if repo is not None:
        for directory in _ancestor_dirs(repo.top, folder_abs):
            out += [os.path.join(directory, name) for name in IGNORE_FILE_NAMES]
        out.append(os.path.join(repo.git_dir, "info", "exclude"))
    out.append(global_excludes_path(repo))
    out += git_config_files(repo)
    return [Path(p) for p in dict.fromkeys(out)]


# --------------------------------------------------------------------------- rules in force


_Link = tuple[str, str, IgnoreFile]  # (prefix to strip, prefix to add, file): see IgnoreRules.is_ignored


class IgnoreRules:
    """The ignore patterns in force in one directory of a walk, lowest precedence first."""

    __slots__ = ("_chain", "_max")

    def __init__(self, chain: tuple[_Link, ...] = (), max_patterns: int = DEFAULT_MAX_PATTERNS) -> None:
        self._chain = chain
        self._max = max_patterns

    @classmethod
    def for_root(
        cls, root: Path, names: set[str] | None = None, *, max_patterns: int = DEFAULT_MAX_PATTERNS
    ) -> IgnoreRules:
        """Rules of a workspace folder: git's sources above it, then its own ignore files."""
        folder = os.path.abspath(os.fspath(root))
        repo = find_repo(folder)
        chain: list[_Link] = []

        def lifted(base: str) -> str:
            rel = os.path.relpath(folder, base)
            return "" if rel == "." else rel.replace(os.sep, "/") + "/"

        top = repo.top if repo is not None else folder
        excludes = load_ignore_file(global_excludes_path(repo), max_patterns)
        if excludes is not None:
            chain.append(("", lifted(top), excludes))
        if repo is not None:
            info = load_ignore_file(os.path.join(repo.git_dir, "info", "exclude"), max_patterns)
            if info is not None:
                chain.append(("", lifted(top), info))
            for directory in _ancestor_dirs(repo.top, folder):
                for name in IGNORE_FILE_NAMES:
                    found = load_ignore_file(os.path.join(directory, name), max_patterns, follow=False)
                    if found is not None:
                        chain.append(("", lifted(directory), found))
        return cls(tuple(chain), max_patterns).descend("", root, names)

    def descend(self, rel_dir: str, abs_dir: Path | str, names: set[str] | None = None) -> IgnoreRules:
        """Rules inside ``abs_dir`` (``rel_dir`` is its posix path from the root, "" for the root).

        ``names`` are the entry names of that directory when already known (saves a lookup).
        """
        chain = self._chain
        for ignore_name in IGNORE_FILE_NAMES:
            if names is not None and ignore_name not in names:
                continue
            found = load_ignore_file(os.path.join(abs_dir, ignore_name), self._max, follow=False)
            if found is not None:
                chain = (*chain, (rel_dir + "/" if rel_dir else "", "", found))
        return self if chain is self._chain else IgnoreRules(chain, self._max)

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether ``rel_path`` (posix, relative to the root) is matched, its directories aside.

        Use :meth:`is_ancestor_ignored` when the directories above it were not checked already.
        """
        for strip, add, ignore_file in reversed(self._chain):
            rel = rel_path
            if strip:
                if not rel.startswith(strip):
                    continue
                rel = rel[len(strip) :]
                if not rel:
                    continue
            verdict = ignore_file.match(add + rel if add else rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def is_ancestor_ignored(self, rel_path: str) -> bool:
        """Whether any directory above ``rel_path`` (or the path itself as a file) is ignored."""
        parts = rel_path.split("/")
        for i in range(1, len(parts)):
            if self.is_ignored("/".join(parts[:i]), True):
                return True
        return self.is_ignored(rel_path, False)

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per ignore file in force that was cut at the pattern limit."""
        return tuple(w for _s, _a, f in self._chain if (w := f.warning()) is not None)

    @property
    def files(self) -> tuple[str, ...]:
        """Paths of the ignore files in force, lowest precedence first."""
        return tuple(f.path for _s, _a, f in self._chain)


def is_ignored_below(top: str, rel_path: str) -> bool:
    """Whether the file at ``rel_path`` (posix, under the directory ``top``, a repository's top) is
    ignored, by any ignore file from ``top`` down to it or by any ignored directory on the way: the
    verdict a walk from ``top`` would reach, for one path, without walking."""
    rules = IgnoreRules.for_root(Path(top))
    parts = rel_path.split("/")
    current = top
    for k in range(1, len(parts)):
        sub = "/".join(parts[:k])
        if rules.is_ignored(sub, True):
            return True
        current = os.path.join(current, parts[k - 1])
        rules = rules.descend(sub, current)
    return rules.is_ignored(rel_path, False)


def ignore_warnings(rules_of_dirs: Iterable[IgnoreRules]) -> list[str]:
    """The distinct pattern-limit warnings of several directories' rules, in order."""
    return list(dict.fromkeys(w for rules in rules_of_dirs for w in rules.warnings))


# --------------------------------------------------------------------------- the walk


@dataclass(slots=True)
class DirListing:
    """One directory reached by :func:`walk`."""

    rel_dir: str  # posix path from the root, "" for the root
    abs_dir: str
    rules: IgnoreRules
    files: list[os.DirEntry[str]]  # not matched against the rules: match what you need
    dirs: list[str]  # names of the sub-directories that will be entered (not ignored)


def walk(
    root: Path,
    *,
    pruned_names: frozenset[str] = ALWAYS_PRUNED,
    max_patterns: int = DEFAULT_MAX_PATTERNS,
) -> Iterator[DirListing]:
    """Depth-first walk of ``root`` honouring ignore files; never follows directory symlinks.

    Unreadable directories are skipped silently. Sub-directories in ``pruned_names`` (``.git``)
    are never entered. The caller may remove names from ``listing.dirs`` to prune further.
    ``max_patterns`` caps the patterns read from each ignore file.
    """
    root_str = os.fspath(root)
    stack: list[tuple[str, str, IgnoreRules | None]] = [("", root_str, None)]
    while stack:
        rel_dir, abs_dir, parent_rules = stack.pop()
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name for e in entries}
        if parent_rules is None:
            rules = IgnoreRules.for_root(Path(abs_dir), names, max_patterns=max_patterns)
        elif names.isdisjoint(IGNORE_FILE_NAMES):
            rules = parent_rules
        else:
            rules = parent_rules.descend(rel_dir, abs_dir, names)
        files: list[os.DirEntry[str]] = []
        dirs: list[str] = []
        prefix = rel_dir + "/" if rel_dir else ""
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name in pruned_names or rules.is_ignored(prefix + entry.name, True):
                    continue
                dirs.append(entry.name)
            else:
                files.append(entry)
        listing = DirListing(rel_dir, abs_dir, rules, files, dirs)
        yield listing
        for name in sorted(listing.dirs, reverse=True):
            stack.append((prefix + name, os.path.join(abs_dir, name), rules))
