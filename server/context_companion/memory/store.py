"""The memory store: discovery, reading, imports, rules, composition and change tracking.

Tiers, in the order they are rendered (later blocks take precedence, so the most specific
text comes last, as in the AGENTS.md convention "the closest file wins"):

1. **global**: ``~/.gemini/GEMINI.md`` and ``~/.claude/CLAUDE.md`` when
   ``memory.readVendorGlobals`` is on, then the memory file names in the Context Companion
   config dir (our own global memory, where ``addMemory`` writes, comes last);
2. **workspace**: per workspace folder, the directories from the nearest boundary marker down to
   the folder (root → leaf), always included;
3. **jit**: memory files in sub-directories of a workspace folder, included while an open or
   active file lies under that sub-directory; root → leaf, the closest file last;
4. **rule**: glob-scoped rules (see :mod:`.rules`), then the list of description-only rules.

Everything is read once and cached; :meth:`MemoryStore.compose` only assembles cached blocks
and caches its result keyed by which JIT files and rules are active (and the file that made
each active), so the same editor state costs a dict lookup. :meth:`MemoryStore.apply_changes`
re-reads only the paths it is given (plus what imports them); an ignore file, a directory or a
boundary marker re-walks that folder, which re-reads nothing unchanged.

All methods are safe to call from several threads (one re-entrant lock).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ignore import IGNORE_FILE_NAMES
from ..settings import MemorySettings, user_config_dir
from .discovery import FolderIndex, index_folder, rules_for, upward_chain
from .imports import ImportExpander, is_within
from .model import (
    ChangeKind,
    ChangeSummary,
    FileAnalysis,
    MemoryFileInfo,
    MemoryResult,
    Tier,
)
from .reading import ReadOutcome, read_text_file, signature_of
from .rules import (
    FORMAT_ORDER,
    RULE_DIR_PREFIXES,
    ParsedRule,
    RuleFormat,
    describe_globs,
    parse_rule,
    rule_format_for,
)
from .wording import (
    LISTING_FOOTER,
    LISTING_HEADER,
    LISTING_INTRO,
    REASON_ALWAYS,
    REASON_DESCRIPTION,
    REASON_EMPTY,
    REASON_GLOBAL,
    REASON_WORKSPACE,
    reason_dropped,
    reason_manual,
    render_block,
)

log = logging.getLogger(__name__)

VENDOR_GLOBALS: tuple[tuple[str, str], ...] = ((".gemini", "GEMINI.md"), (".claude", "CLAUDE.md"))
RULE_DIRS = frozenset({".context-companion/rules", ".cursor/rules", ".github/instructions", ".claude/rules"})
_RESULT_CACHE_SIZE = 64
_MATCH_MEMO_SIZE = 4096


def _posix(rel: str) -> str:
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


@dataclass(slots=True)
class _Entry:
    """One memory or rule file as last read and rendered."""

    abs_path: str
    display: str
    tier: Tier
    folder: int | None  # index into the store's folders; None for global files
    rel: str = ""  # posix, relative to its folder ("" for global files)
    rel_dir: str = ""  # for jit files: the directory it governs
    order: tuple[Any, ...] = ()
    real: str = ""
    ignored: bool = False
    rule_format: RuleFormat | None = None
    rule: ParsedRule | None = None
    skip: str | None = None  # why it is skipped (then block is "")
    content: str = ""  # rendered content, imports expanded, frontmatter stripped
    block: str = ""
    tokens: int = 0
    deps: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    missing: bool = False

    def state(self) -> tuple[Any, ...]:
        return (
            self.block,
            self.skip,
            self.ignored,
            self.missing,
            self.rule.mode if self.rule else None,
            self.rule.globs if self.rule else None,
            self.rule.description if self.rule else None,
        )


@dataclass(slots=True)
class _Folder:
    path: str  # absolute, normalised (as given)
    real: str
    prefix: str  # "" for a single folder, "<name>/" in a multi-root workspace
    chain: list[str] = field(default_factory=list)  # workspace-tier dirs, root → leaf
    top_real: str = ""  # realpath of chain[0]: the allowed root for imports
    index: FolderIndex = field(default_factory=FolderIndex)
    workspace: list[_Entry] = field(default_factory=list)
    jit: dict[str, _Entry] = field(default_factory=dict)  # rel → entry
    jit_by_dir: dict[str, list[_Entry]] = field(default_factory=dict)
    rules: list[_Entry] = field(default_factory=list)
    exists: bool = True
    prefix_path: str = ""  # path + separator, for fast "is under" tests

    def __post_init__(self) -> None:
        self.prefix_path = self.path.rstrip(os.sep) + os.sep


def _norm(path: str | Path) -> str:
    return os.path.normpath(os.path.abspath(os.fspath(path)))


class MemoryStore:
    """Memory files of the workspace folders and the global dirs; see the module docstring."""

    def __init__(
        self,
        settings: MemorySettings,
        workspace_folders: Sequence[Path],
        *,
        count_tokens: Callable[[str], int],
        global_dir: Path | None = None,
        home: Path | None = None,
    ) -> None:
        self.settings = settings
        self._count = count_tokens
        self._home = _norm(home if home is not None else Path.home())
        self._global_dir = _norm(global_dir if global_dir is not None else user_config_dir())
        self._global_real = os.path.realpath(self._global_dir)
        self._lock = threading.RLock()
        self._names = tuple(settings.file_names)
        self._name_set = frozenset(self._names)
        self._markers = tuple(settings.boundary_markers)
        self._folder_paths: list[str] = []
        self._folders: list[_Folder] = []
        self._globals: list[_Entry] = []
        self._global_candidates: list[tuple[str, str]] = []  # (abs path, allowed root)
        self._global_paths: frozenset[str] = frozenset()  # the candidates and their directories
        self._read_cache: dict[str, ReadOutcome] = {}
        self._dep_index: dict[str, set[str]] = {}  # dependency path → entry abs paths
        self._generation = 0
        self._results: OrderedDict[Any, MemoryResult] = OrderedDict()
        self._match_memo: dict[tuple[int, str], tuple[tuple[str, str], ...]] = {}
        self._memo_generation = -1
        self._last_infos: dict[str, MemoryFileInfo] = {}
        self._last_call: tuple[Any, MemoryResult] | None = None
        self._glob_cache: dict[tuple[str, str], bool] = {}  # (folder, glob) → matches a file (language features)
        self._roots_seen: tuple[list[Path], list[Path]] = ([], [])
        self._expander = ImportExpander(
            read=self._read, display=self._display, home=self._home, max_depth=settings.import_max_depth
        )
        self._set_folders(workspace_folders)
        self._loaded = False

    # ------------------------------------------------------------------ public: loading

    def load(self) -> None:
        """Index and read everything (start-up and refreshMemory). Never raises for bad files."""
        with self._lock:
            self._read_cache.clear()
            self._expander.forget_roots()
            self._global_real = os.path.realpath(self._global_dir)
            self._load_globals()
            for i in range(len(self._folders)):
                self._load_folder(i)
            self._loaded = True
            self._roots_seen = (self.watch_roots(), self.flat_watch_roots())
            self._bump()

    def set_workspace_folders(self, folders: Sequence[Path]) -> None:
        """Replace the workspace folders; folders kept keep their index, new ones are indexed."""
        with self._lock:
            old = {f.path: f for f in self._folders}
            self._set_folders(folders)
            for i, folder in enumerate(self._folders):
                previous = old.get(folder.path)
                if previous is not None and previous.prefix == folder.prefix and self._loaded:
                    self._folders[i] = previous
                    for entry in self._folder_entries(previous):
                        entry.folder = i
                elif self._loaded:
                    self._load_folder(i)
            self._rebuild_dep_index()
            self._bump()

    # ------------------------------------------------------------------ public: composing

    def compose(self, open_paths: Sequence[Path | str], active_path: Path | str | None = None) -> MemoryResult:
        """The memory part of the instruction for these open files (cached by what is active)."""
        with self._lock:
            if not self._loaded:
                self.load()
            raw = (self._generation, tuple(map(os.fspath, open_paths)), os.fspath(active_path) if active_path else None)
            if self._last_call is not None and self._last_call[0] == raw:
                return self._last_call[1]  # the very same call as last time: nothing to work out
            active = _norm(active_path) if active_path is not None else None
            opened = {_norm(p) for p in open_paths}
            if active is not None:
                opened.add(active)
            jit_active, rule_active = self._activity(sorted(opened), active)
            key = (self._generation, tuple(sorted(jit_active.items())), tuple(sorted(rule_active.items())))
            result = self._results.get(key)
            if result is None:
                result = self._build(jit_active, rule_active)
                self._results[key] = result
                if len(self._results) > _RESULT_CACHE_SIZE:
                    self._results.popitem(last=False)
            else:
                self._results.move_to_end(key)
            self._last_infos = {info.abs_path: info for info in result.files}
            self._last_call = (raw, result)
            return result

    # ------------------------------------------------------------------ public: changes

    def apply_changes(self, paths: Iterable[str | Path]) -> ChangeSummary:
        """Re-read what these changed paths affect; say what changed for the instruction."""
        with self._lock:
            if not self._loaded:
                self.load()
                return ChangeSummary((), "workspaceChanged")
            before = self._snapshot()
            structural = False
            reglobal = False
            reupward: set[int] = set()
            reindex: set[int] = set()
            rerules: set[int] = set()
            jit_files: set[tuple[int, str]] = set()
            rerender: set[str] = set()
            global_paths = {p for p, _ in self._global_candidates}
            global_dirs = {os.path.dirname(p) for p in global_paths}
            for raw in paths:
                path = _norm(raw)
                self._forget(path)
                if path in global_paths or path in global_dirs or self._global_dir.startswith(path + os.sep):
                    reglobal = True
                for dep_owner in self._dep_index.get(path, ()):
                    rerender.add(dep_owner)
                for i, folder in enumerate(self._folders):
                    if is_within(path, [folder.path]):
                        rel = _posix(os.path.relpath(path, folder.path)) if path != folder.path else ""
                        if rel == "":
                            reindex.add(i)
                            structural = True
                            continue
                        if not self._relevant_in_folder(folder, path):
                            continue  # e.g. inside an ignored directory: nothing to re-read
                        parts = rel.split("/")
                        name = parts[-1]
                        if parts[0] in RULE_DIR_PREFIXES:
                            rerules.add(i)
                        if name in IGNORE_FILE_NAMES or rel == ".git/info/exclude":
                            reindex.add(i)
                            structural = True
                        elif len(parts) == 1 and name in self._markers:
                            reupward.add(i)
                            structural = True
                        elif name in self._name_set and not os.path.isdir(path):
                            if len(parts) == 1:
                                reupward.add(i)
                            else:
                                jit_files.add((i, rel))
                        elif parts[0] == ".git":
                            continue
                        elif os.path.isdir(path) or rel in folder.index.dirs or self._has_entries_under(folder, rel):
                            reindex.add(i)
                            structural = True
                    elif os.path.dirname(path) in folder.chain[:-1]:
                        name = os.path.basename(path)
                        if name in self._name_set or name in self._markers:
                            reupward.add(i)
                            structural = structural or name in self._markers
            if reglobal:
                self._load_globals()
            for i in sorted(reupward - reindex):
                self._load_upward(i)
            for i in sorted(reindex):
                self._load_folder(i)
            for i in sorted(rerules - reindex):
                self._load_rules(i)
            for i, rel in sorted(jit_files):
                if i not in reindex:
                    self._update_jit_file(i, rel)
            for owner in rerender:
                entry = self._entry_by_path(owner)
                if entry is not None:
                    self._render(entry)
            self._rebuild_dep_index()
            after = self._snapshot()
            changed = sorted(
                {
                    after[k][0] if k in after else before[k][0]
                    for k in set(before) | set(after)
                    if before.get(k) != after.get(k)
                }
            )
            kinds = {
                after[k][1] if k in after else before[k][1]
                for k in set(before) | set(after)
                if before.get(k) != after.get(k)
            }
            kind: ChangeKind | None
            if structural:
                kind = "workspaceChanged"
            elif not changed:
                kind = None
            elif kinds == {"rule"}:
                kind = "rulesChanged"
            else:
                kind = "memoryChanged"
            if changed or structural:
                self._bump()
            roots = (self.watch_roots(), self.flat_watch_roots())
            roots_changed, self._roots_seen = roots != self._roots_seen, roots
            return ChangeSummary(tuple(changed), kind, roots_changed)

    def is_relevant_path(self, path: str | Path) -> bool:
        """Would a change to this path matter (memory, rule, ignore or imported file, or a directory)?"""
        norm = _norm(path)
        with self._lock:
            if norm in self._dep_index:
                return True
            if norm in self._global_paths:
                return True
            if self._global_dir.startswith(norm + os.sep):
                return True  # a parent of the global dir appeared or vanished (see flat_watch_roots)
            for folder in self._folders:
                if norm == folder.path:
                    return True
                if norm.startswith(folder.prefix_path):
                    if self._relevant_in_folder(folder, norm):
                        return True
                    continue
                parent = os.path.dirname(norm)
                if parent in folder.chain[:-1]:
                    name = os.path.basename(norm)
                    if name in self._name_set or name in self._markers:
                        return True
            return False

    def watch_roots(self) -> list[Path]:
        """Directories to watch recursively: the workspace folders and the existing global dirs."""
        with self._lock:
            roots: list[str] = [f.path for f in self._folders if os.path.isdir(f.path)]
            for candidate, _ in self._global_candidates:
                parent = os.path.dirname(candidate)
                if os.path.isdir(parent) and parent not in roots and not is_within(parent, roots):
                    roots.append(parent)
            return [Path(r) for r in roots]

    def flat_watch_roots(self) -> list[Path]:
        """Directories worth watching without recursion: the workspace tier above each folder, and
        the nearest existing parent of a global dir that does not exist yet (to see it appear)."""
        with self._lock:
            roots: list[str] = []
            for folder in self._folders:
                for d in folder.chain[:-1]:
                    if d not in roots and os.path.isdir(d):
                        roots.append(d)
            if not os.path.isdir(self._global_dir):
                parent = os.path.dirname(self._global_dir)
                while parent and not os.path.isdir(parent) and os.path.dirname(parent) != parent:
                    parent = os.path.dirname(parent)
                if os.path.isdir(parent) and parent not in roots:
                    roots.append(parent)
            return [Path(r) for r in roots]

    # ------------------------------------------------------------------ public: language features

    def is_memory_document(self, path: Path | str) -> bool:
        """Whether ``path`` is a memory or rule file (for the language features)."""
        with self._lock:
            return self._classify(_norm(path)) is not None

    def analyze(self, path: Path | str, text: str) -> FileAnalysis:
        """Diagnostics, links, hovers and the code lens of an open memory or rule file's text."""
        with self._lock:
            norm = _norm(path)
            where = self._classify(norm)
            if where is None:
                return FileAnalysis()
            tier, folder_i, rel, fmt = where
            from .language import analyze_document

            return analyze_document(self, norm, text, tier, folder_i, rel, fmt)

    # ------------------------------------------------------------------ internals: setup

    def _set_folders(self, folders: Sequence[Path | str]) -> None:
        paths: list[str] = []
        for f in folders:
            p = _norm(f)
            if p not in paths:
                paths.append(p)
        self._folder_paths = paths
        multi = len(paths) > 1
        used: dict[str, int] = {}
        self._folders = []
        for p in paths:
            name = os.path.basename(p) or p
            if name in used:
                used[name] += 1
                name = f"{name} ({used[name]})"
            else:
                used[name] = 1
            self._folders.append(_Folder(p, os.path.realpath(p), f"{name}/" if multi else ""))

    def _bump(self) -> None:
        self._generation += 1
        self._results.clear()
        self._glob_cache.clear()

    def _forget(self, path: str) -> None:
        self._read_cache.pop(path, None)
        self._read_cache.pop(os.path.realpath(path), None)

    # ------------------------------------------------------------------ internals: reading

    def _read(self, path: str) -> ReadOutcome:
        cached = self._read_cache.get(path)
        if cached is not None:
            sig = signature_of(path)
            if sig is not None and sig == cached.signature:
                return cached
            if sig is None and cached.missing:
                return cached
        outcome = read_text_file(path, self.settings.max_file_bytes)
        self._read_cache[path] = outcome
        # Logged once per actual read (cache hits stay quiet); MemoryResult.warnings repeats them.
        if outcome.skip:
            log.warning("memory file %s skipped: %s", path, outcome.skip)
        elif outcome.warning:
            log.warning("memory file %s: %s", path, outcome.warning)
        return outcome

    def _display(self, abs_path: str) -> str:
        """Display path: relative to its workspace folder, else ``~/...`` under home, else absolute."""
        best: _Folder | None = None
        for folder in self._folders:
            if is_within(abs_path, [folder.path]) and (best is None or len(folder.path) > len(best.path)):
                best = folder
        if best is not None:
            return best.prefix + _posix(os.path.relpath(abs_path, best.path))
        for folder in self._folders:
            if os.path.dirname(abs_path) in folder.chain:
                return folder.prefix + _posix(os.path.relpath(abs_path, folder.path))
        return self._home_display(abs_path)

    def _home_display(self, abs_path: str) -> str:
        if is_within(abs_path, [self._home]) and abs_path != self._home:
            return "~/" + _posix(os.path.relpath(abs_path, self._home))
        return _posix(abs_path)

    def _render(self, entry: _Entry) -> None:
        """(Re)read and render one entry: limits, frontmatter, imports, tokens."""
        entry.warnings = []
        entry.deps = set()
        entry.skip = None
        entry.content = entry.block = ""
        entry.tokens = 0
        entry.missing = False
        entry.real = os.path.realpath(entry.abs_path)
        roots = self._allowed_roots(entry)
        if entry.folder is not None and not is_within(entry.real, roots):
            entry.skip = "symlink leads outside the workspace"
            entry.warnings.append(f"{entry.display}: skipped: {entry.skip}")
            return
        outcome = self._read(entry.real)
        if outcome.text is None:
            if outcome.missing:
                entry.missing = True
                entry.skip = "not found"
                return
            entry.skip = outcome.skip
            entry.warnings.append(f"{entry.display}: skipped: {outcome.skip}")
            return
        if outcome.warning:
            entry.warnings.append(f"{entry.display}: {outcome.warning}")
        text = outcome.text
        if entry.rule_format is not None:
            rule = parse_rule(entry.rule_format, text)
            entry.rule = rule
            if rule.error:
                entry.skip = f"frontmatter: {rule.error}"
                entry.warnings.append(f"{entry.display}: skipped: {entry.skip}")
                return
            for key, _line, hint in rule.unknown_keys:
                entry.warnings.append(f"{entry.display}: unknown frontmatter key '{key}'{hint}")
            text = rule.body
        expansion = self._expander.expand(text, entry.abs_path, roots, entry.real)
        entry.deps = expansion.deps
        for failure in expansion.failures:
            entry.warnings.append(f"{entry.display}: import {failure.path} failed: {failure.reason}")
        content = expansion.text.strip("\n").rstrip()
        entry.content = content
        if content.strip():
            entry.block = render_block(entry.display, content)
            entry.tokens = self._count(entry.block)

    def _allowed_roots(self, entry: _Entry) -> list[str]:
        """Real paths imports of this entry may resolve into (and the entry itself must lie in)."""
        roots = [self._global_real]
        if entry.folder is None:
            parent = os.path.dirname(entry.abs_path)
            if parent != self._global_dir:
                roots.append(os.path.realpath(parent))
        else:
            folder = self._folders[entry.folder]
            roots.append(folder.top_real or folder.real)
        return roots

    # ------------------------------------------------------------------ internals: tiers

    def _load_globals(self) -> None:
        candidates: list[tuple[str, str]] = []
        if self.settings.read_vendor_globals:
            for sub, name in VENDOR_GLOBALS:
                d = os.path.join(self._home, sub)
                candidates.append((os.path.join(d, name), d))
        for name in self._names:
            candidates.append((os.path.join(self._global_dir, name), self._global_dir))
        self._global_candidates = candidates
        self._global_paths = frozenset(p for c, _ in candidates for p in (c, os.path.dirname(c)))
        entries: list[_Entry] = []
        for i, (path, _root) in enumerate(candidates):
            if not os.path.lexists(path):
                continue
            entry = _Entry(path, self._home_display(path), "global", None, order=(0, i))
            self._render(entry)
            entries.append(entry)
        self._globals = entries
        self._rebuild_dep_index()

    def _load_folder(self, i: int) -> None:
        folder = self._folders[i]
        folder.exists = os.path.isdir(folder.path)
        self._load_upward(i)
        self._index(i)
        self._load_rules(i)

    def _load_upward(self, i: int) -> None:
        folder = self._folders[i]
        folder.exists = os.path.isdir(folder.path)
        if not folder.exists:
            folder.chain = [folder.path]
            folder.workspace = []
            folder.top_real = folder.real
            return
        folder.chain = upward_chain(folder.path, self._markers)
        folder.top_real = os.path.realpath(folder.chain[0])
        entries: list[_Entry] = []
        for depth, d in enumerate(folder.chain):
            for n, name in enumerate(self._names):
                path = os.path.join(d, name)
                if not os.path.lexists(path):
                    continue
                entry = _Entry(path, self._display(path), "workspace", i, order=(1, i, depth, n))
                if d == folder.path:
                    entry.rel = name
                self._render(entry)
                entries.append(entry)
        folder.workspace = entries
        self._rebuild_dep_index()

    def _index(self, i: int) -> None:
        folder = self._folders[i]
        if not folder.exists:
            folder.index = FolderIndex()
            folder.jit = {}
            folder.jit_by_dir = {}
            return
        folder.index = index_folder(folder.path, self._names)
        old = folder.jit
        jit: dict[str, _Entry] = {}
        for f in folder.index.files:
            entry = old.get(f.rel_path)
            if entry is None or entry.abs_path != f.abs_path:
                entry = self._new_jit_entry(i, f.abs_path, f.rel_path, f.rel_dir)
            entry.ignored = f.ignored
            self._render(entry)  # cheap when unchanged: the read cache checks the signature
            jit[f.rel_path] = entry
        folder.jit = jit
        self._rebuild_jit_by_dir(folder)
        self._rebuild_dep_index()

    def _new_jit_entry(self, i: int, abs_path: str, rel: str, rel_dir: str) -> _Entry:
        name = rel.rsplit("/", 1)[-1]
        n = self._names.index(name) if name in self._names else len(self._names)
        order = (2, i, tuple(rel_dir.split("/")), n)
        return _Entry(abs_path, self._display(abs_path), "jit", i, rel=rel, rel_dir=rel_dir, order=order)

    def _rebuild_jit_by_dir(self, folder: _Folder) -> None:
        by_dir: dict[str, list[_Entry]] = {}
        for entry in folder.jit.values():
            by_dir.setdefault(entry.rel_dir, []).append(entry)
        folder.jit_by_dir = by_dir

    def _update_jit_file(self, i: int, rel: str) -> None:
        """One memory file below the folder root changed, appeared or vanished."""
        folder = self._folders[i]
        rules, parent_indexed = rules_for(folder.index, rel)
        abs_path = os.path.join(folder.path, *rel.split("/"))
        if not parent_indexed:
            # Its directory is new or ignored: only a walk can tell.
            if rules is not None and not rules.is_ancestor_ignored(rel):
                self._index(i)
            return
        rel_dir = rel.rsplit("/", 1)[0]
        if not os.path.lexists(abs_path):
            folder.jit.pop(rel, None)
        else:
            entry = folder.jit.get(rel) or self._new_jit_entry(i, abs_path, rel, rel_dir)
            entry.ignored = rules.is_ignored(rel, False) if rules is not None else False
            self._render(entry)
            folder.jit[rel] = entry
        self._rebuild_jit_by_dir(folder)

    def _load_rules(self, i: int) -> None:
        from .rules import find_rule_files

        folder = self._folders[i]
        if not folder.exists:
            folder.rules = []
            return
        entries: list[_Entry] = []
        for abs_path, rel, fmt in find_rule_files(folder.path):
            order = (3, i, FORMAT_ORDER.index(fmt), rel)
            entry = _Entry(abs_path, self._display(abs_path), "rule", i, rel=rel, order=order, rule_format=fmt)
            self._render(entry)
            if entry.missing:
                continue
            entries.append(entry)
        folder.rules = entries
        self._rebuild_dep_index()

    # ------------------------------------------------------------------ internals: bookkeeping

    def _folder_entries(self, folder: _Folder) -> list[_Entry]:
        return [*folder.workspace, *folder.jit.values(), *folder.rules]

    def _all_entries(self) -> list[_Entry]:
        out = list(self._globals)
        for folder in self._folders:
            out.extend(self._folder_entries(folder))
        return out

    def _entry_by_path(self, abs_path: str) -> _Entry | None:
        for entry in self._all_entries():
            if entry.abs_path == abs_path:
                return entry
        return None

    def _rebuild_dep_index(self) -> None:
        index: dict[str, set[str]] = {}
        for entry in self._all_entries():
            index.setdefault(entry.abs_path, set()).add(entry.abs_path)
            if entry.real and entry.real != entry.abs_path:
                index.setdefault(entry.real, set()).add(entry.abs_path)
            for dep in entry.deps:
                index.setdefault(dep, set()).add(entry.abs_path)
        self._dep_index = index

    def _snapshot(self) -> dict[str, tuple[str, Tier, tuple[Any, ...]]]:
        return {e.abs_path: (e.display, e.tier, e.state()) for e in self._all_entries()}

    def _has_entries_under(self, folder: _Folder, rel: str) -> bool:
        prefix = rel + "/"
        return any(r.startswith(prefix) for r in folder.jit) or any(e.rel.startswith(prefix) for e in folder.rules)

    def _relevant_in_folder(self, folder: _Folder, norm: str) -> bool:
        rel = _posix(norm[len(folder.prefix_path) :])
        parts = rel.split("/")
        name = parts[-1]
        if rule_format_for(rel) is not None:
            return True
        if (len(parts) == 1 and name in RULE_DIR_PREFIXES) or rel in RULE_DIRS:
            return True  # a rule directory itself (created, deleted, renamed)
        if len(parts) > 2 and "/".join(parts[:2]) in RULE_DIRS:
            # Inside a rule directory only rule files (and, for the recursive ones, sub-directories) count.
            recursive = parts[:2] in ([".github", "instructions"], [".claude", "rules"])
            return recursive and (os.path.isdir(norm) or self._has_entries_under(folder, rel))
        if rel == ".git/info/exclude":
            return True
        if len(parts) == 1 and name in self._markers:
            return True
        if parts[0] == ".git":
            return False  # git's own churn
        dirs = folder.index.dirs
        parent = rel.rpartition("/")[0]
        rules = dirs.get(parent)
        if rules is None:
            # Inside a directory not indexed: a new one (relevant) or an ignored one (not). The
            # verdict on its top-most unindexed directory is memoised until the next walk.
            i = len(parts) - 1
            while i > 0 and "/".join(parts[:i]) not in dirs:
                i -= 1
            top = "/".join(parts[: i + 1])
            verdict = folder.index.verdicts.get(top)
            if verdict is None:
                anchor = dirs.get("/".join(parts[:i]))
                verdict = anchor is None or not (parts[i] == ".git" or anchor.is_ignored(top, True))
                folder.index.verdicts[top] = verdict
            return verdict
        if name in IGNORE_FILE_NAMES or name in self._name_set:
            return True
        if rel in folder.index.dirs:
            return True
        if os.path.isdir(norm):
            return rules is None or not rules.is_ignored(rel, True)
        return False

    def _classify(self, norm: str) -> tuple[Tier, int | None, str, RuleFormat | None] | None:
        for candidate, _ in self._global_candidates:
            if norm == candidate:
                return ("global", None, "", None)
        if not self._global_candidates:
            # Before load(): the global names are known anyway.
            if os.path.dirname(norm) == self._global_dir and os.path.basename(norm) in self._name_set:
                return ("global", None, "", None)
        for i, folder in enumerate(self._folders):
            if is_within(norm, [folder.path]) and norm != folder.path:
                rel = _posix(os.path.relpath(norm, folder.path))
                fmt = rule_format_for(rel)
                if fmt is not None:
                    return ("rule", i, rel, fmt)
                parts = rel.split("/")
                if parts[-1] in self._name_set:
                    return ("workspace" if len(parts) == 1 else "jit", i, rel, None)
                continue
            if os.path.dirname(norm) in folder.chain[:-1] and os.path.basename(norm) in self._name_set:
                return ("workspace", i, "", None)
        return None

    # ------------------------------------------------------------------ internals: composing

    def _locate(self, path: str) -> tuple[int, str] | None:
        """(folder index, posix rel path) of an open file inside a workspace folder."""
        for i, folder in enumerate(self._folders):
            if path != folder.path and is_within(path, [folder.path]):
                return i, _posix(os.path.relpath(path, folder.path))
        real = os.path.realpath(path)
        for i, folder in enumerate(self._folders):
            if real != folder.real and is_within(real, [folder.real]):
                return i, _posix(os.path.relpath(real, folder.real))
        return None

    def _activity(
        self, opened: list[str], active: str | None
    ) -> tuple[dict[str, tuple[str, bool]], dict[str, tuple[str, str, bool]]]:
        """Which JIT files and glob rules are active, each with the open file that made it so.

        The active file is preferred as the witness, then the first open file in path order.
        """
        if self._memo_generation != self._generation or len(self._match_memo) > _MATCH_MEMO_SIZE:
            self._match_memo.clear()
            self._memo_generation = self._generation
        jit: dict[str, tuple[str, bool]] = {}
        rules: dict[str, tuple[str, str, bool]] = {}
        located = [(p, self._locate(p)) for p in opened]
        # Active first, then path order: the first witness found sticks.
        located.sort(key=lambda item: (item[0] != active, item[0]))
        for path, where in located:
            if where is None:
                continue
            i, rel = where
            is_active = path == active
            folder = self._folders[i]
            parts = rel.split("/")
            for k in range(1, len(parts)):
                for entry in folder.jit_by_dir.get("/".join(parts[:k]), ()):
                    jit.setdefault(entry.abs_path, (rel, is_active))
            matches = self._match_memo.get((i, rel))
            if matches is None:
                found: list[tuple[str, str]] = []
                for entry in folder.rules:
                    rule = entry.rule
                    if rule is None or entry.skip or rule.mode != "globs":
                        continue
                    glob = rule.matching_glob(rel)
                    if glob is not None:
                        found.append((entry.abs_path, glob))
                matches = tuple(found)
                self._match_memo[(i, rel)] = matches
            for abs_path, glob in matches:
                rules.setdefault(abs_path, (rel, glob, is_active))
        return jit, rules

    def _build(
        self, jit_active: dict[str, tuple[str, bool]], rule_active: dict[str, tuple[str, str, bool]]
    ) -> MemoryResult:
        infos: dict[str, tuple[_Entry, bool, str]] = {}  # abs_path → (entry, included, reason)
        order: list[_Entry] = []
        warnings: list[str] = []
        included_real: dict[str, str] = {}
        listed: list[_Entry] = []

        def consider(entry: _Entry, wants: bool, reason: str) -> None:
            if entry.abs_path in infos:
                return  # nested workspace folders: the file was already accounted for
            order.append(entry)
            warnings.extend(entry.warnings)
            if entry.skip:
                infos[entry.abs_path] = (entry, False, f"skipped: {entry.skip}")
                return
            if not wants:
                infos[entry.abs_path] = (entry, False, reason)
                return
            if not entry.block:
                infos[entry.abs_path] = (entry, False, REASON_EMPTY)
                return
            twin = included_real.get(entry.real)
            if twin is not None:
                infos[entry.abs_path] = (entry, False, f"not included: same file as {twin}")
                return
            included_real[entry.real] = entry.display
            infos[entry.abs_path] = (entry, True, reason)

        for entry in self._globals:
            if entry.missing:
                continue
            consider(entry, True, REASON_GLOBAL)
        for folder in self._folders:
            if not folder.exists:
                warnings.append(f"workspace folder {folder.path} does not exist or is not a directory")
            for entry in folder.workspace:
                if not entry.missing:
                    consider(entry, True, REASON_WORKSPACE)
        for folder in self._folders:
            for entry in sorted(folder.jit.values(), key=lambda e: e.order):
                if entry.missing:
                    continue
                if entry.ignored:
                    continue  # matched by an ignore file: not discovered (kept only to follow changes)
                dir_display = folder.prefix + entry.rel_dir + "/"
                witness = jit_active.get(entry.abs_path)
                if witness is None:
                    consider(entry, False, f"not included: no open file under {dir_display}")
                else:
                    rel, is_active = witness
                    who = "active file" if is_active else "open file"
                    consider(entry, True, f"{who} {folder.prefix}{rel} is under {dir_display}")
        for folder in self._folders:
            for entry in sorted(folder.rules, key=lambda e: e.order):
                rule = entry.rule
                if rule is None or entry.skip:
                    consider(entry, False, "")
                    continue
                if rule.mode == "always":
                    consider(entry, True, REASON_ALWAYS)
                elif rule.mode == "globs":
                    hit = rule_active.get(entry.abs_path)
                    if hit is None:
                        consider(entry, False, f"not included: no open file matches {describe_globs(rule.globs)}")
                    else:
                        rel, glob, _is_active = hit
                        consider(entry, True, f"rule: glob '{glob}' matches {folder.prefix}{rel}")
                elif rule.mode == "description":
                    consider(entry, False, REASON_DESCRIPTION)
                    if entry.block:
                        listed.append(entry)
                else:
                    consider(entry, False, reason_manual(entry.rule_format))

        # The memory.maxTokens cap: rules and JIT files go first, then the farthest workspace files.
        blocks: dict[str, str] = {e.abs_path: e.block for e, inc, _ in infos.values() if inc}
        listing = self._listing_block(listed)
        dropped: list[str] = []
        cap = self.settings.max_tokens
        if cap > 0:
            drop_order: list[str] = []
            if listing:
                drop_order.append("\0listing")
            by_tier = {
                t: [e for e in order if infos[e.abs_path][1] and e.tier == t]
                for t in ("global", "workspace", "jit", "rule")
            }
            drop_order += [e.abs_path for e in reversed(by_tier["rule"])]
            drop_order += [e.abs_path for e in by_tier["jit"]]
            drop_order += [e.abs_path for e in by_tier["workspace"]]
            drop_order += [e.abs_path for e in by_tier["global"]]
            tokens = {k: infos[k][0].tokens for k in blocks}
            if listing:
                tokens["\0listing"] = self._count(listing)
            total = sum(tokens.values())
            pending = iter(drop_order)
            while True:
                if total <= cap:
                    text = self._join(order, blocks, listing)
                    if self._count(text) <= cap:
                        break
                victim = next(pending, None)
                if victim is None:
                    break
                total -= tokens.get(victim, 0)
                if victim == "\0listing":
                    listing = ""
                    for entry in listed:
                        dropped.append(entry.display)
                        e, _, _ = infos[entry.abs_path]
                        infos[entry.abs_path] = (e, False, reason_dropped(cap))
                    continue
                blocks.pop(victim, None)
                entry = infos[victim][0]
                infos[victim] = (entry, False, reason_dropped(cap))
                dropped.append(entry.display)
        text = self._join(order, blocks, listing)
        files = tuple(
            MemoryFileInfo(
                e.display,
                e.abs_path,
                e.tier,
                e.tokens,
                infos[e.abs_path][1],
                infos[e.abs_path][2] or f"skipped: {e.skip}",
            )
            for e in order
        )
        return MemoryResult(text, files, tuple(dropped), tuple(dict.fromkeys(warnings)))

    @staticmethod
    def _join(order: list[_Entry], blocks: dict[str, str], listing: str) -> str:
        parts = [blocks[e.abs_path] for e in order if e.abs_path in blocks]
        if listing:
            parts.append(listing)
        return "\n\n".join(parts)

    @staticmethod
    def _listing_block(listed: list[_Entry]) -> str:
        if not listed:
            return ""
        lines = [LISTING_HEADER, LISTING_INTRO]
        for entry in listed:
            description = " ".join((entry.rule.description if entry.rule else "").split())
            lines.append(f"- {entry.display}: {description}")
        lines.append(LISTING_FOOTER)
        return "\n".join(lines)

    # ------------------------------------------------------------------ for the language features

    def _last_info(self, norm: str) -> MemoryFileInfo | None:
        return self._last_infos.get(norm)
