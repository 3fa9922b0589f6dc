"""The index of memory and rule files per tier, built by discovery and kept rendered.

:class:`MemoryIndex` owns the files the store knows: the global files, and per workspace folder
its upward chain (workspace tier), its downward index (JIT tier) and its rule files. Each
:class:`Entry` holds its last :class:`~.render.Rendered` value; the :class:`~.render.Renderer`
it uses owns the read and render caches. Change handling (:mod:`.changes`) and composition
(:mod:`.compose`) read this index; only the methods here modify it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exclusion import exclude_matcher
from ..ignore import find_repo, ignore_sources, is_ignored_below
from ..settings import MemorySettings
from .discovery import (
    CLAUDE_SUBDIR,
    FolderIndex,
    SubtreeChange,
    dir_candidates,
    governed_dir,
    index_folder,
    is_nested_claude,
    memory_dir_of,
    reindex_subtree,
    rules_for,
    upward,
)
from .formats import HOME_RULE_DIRS, VENDOR_GLOBALS, effective_names, enabled_formats
from .imports import EXCLUDED, IGNORED, ExpandOptions
from .model import Tier
from .paths import home_display, is_within, norm, posix
from .render import Rendered, Renderer, RenderRequest
from .rules import FORMAT_ORDER, RuleFormat, find_home_rules, find_rule_files, nested_bases, rule_format_for

_MEMO_LIMIT = 4096


@dataclass(slots=True)
class Entry:
    """One memory or rule file: where it sits and how it last rendered."""

    abs_path: str
    display: str
    tier: Tier
    folder: int | None  # index into the folders; None for global files
    rel: str = ""  # posix, relative to its folder ("" for global files and files above the folder)
    rel_dir: str = ""  # for jit files and nested rules: the directory it governs
    order: tuple[Any, ...] = ()
    ignored: bool = False  # matched by an ignore file: followed, never included
    rule_format: RuleFormat | None = None
    rendered: Rendered = field(default_factory=Rendered)

    def state(self) -> tuple[Any, ...]:
        """What the instruction depends on: a change here is a change to report."""
        r = self.rendered
        rule = r.rule
        return (
            r.block,
            r.skip,
            self.ignored,
            r.missing,
            rule.mode if rule else None,
            rule.globs if rule else None,
            rule.description if rule else None,
        )


@dataclass(slots=True)
class FolderState:
    """One workspace folder and the memory files found for it."""

    path: str  # absolute, normalised (as given)
    real: str
    prefix: str  # "" for the first folder, "<name>/" for the others
    chain: list[str] = field(default_factory=list)  # workspace-tier dirs, root → leaf
    top_real: str = ""  # realpath of chain[0]: the allowed root for imports
    index: FolderIndex = field(default_factory=FolderIndex)
    workspace: list[Entry] = field(default_factory=list)
    jit: dict[str, Entry] = field(default_factory=dict)  # rel → entry
    jit_by_dir: dict[str, list[Entry]] = field(default_factory=dict)
    jit_order: list[Entry] = field(default_factory=list)  # the jit entries in rendering order
    rules: list[Entry] = field(default_factory=list)
    exists: bool = True
    prefix_path: str = ""  # path + separator, for fast "is under" tests
    # Ignore files outside the folder (repository root down to its parent, info/exclude, the global
    # excludes file, git's config files): a change to one re-walks the folder.
    ignore_sources: frozenset[str] = frozenset()
    # The folder above that holds a marker but is another user's (ownership.find_marker): one line, else None.
    refused: str | None = None

    def __post_init__(self) -> None:
        self.prefix_path = self.path.rstrip(os.sep) + os.sep

    def entries(self) -> list[Entry]:
        return [*self.workspace, *self.jit.values(), *self.rules]


def make_folders(folders: Sequence[Path | str]) -> list[FolderState]:
    """Folder states for these paths (duplicates dropped), named apart in a multi-root workspace.

    The first folder's paths carry no prefix and every other folder's carry its name, so adding a
    folder never relabels the blocks already in an instruction (a relabelled header would change
    the instruction's bytes from the first block on, and with them the provider's cached prefix).
    """
    paths = list(dict.fromkeys(norm(f) for f in folders))
    used: dict[str, int] = {}
    out: list[FolderState] = []
    for p in paths:
        name = os.path.basename(p) or p.rstrip(os.sep)  # the root folder "/": "" (its paths show as "/tmp/...")
        used[name] = used.get(name, 0) + 1
        if used[name] > 1:
            name = f"{name} ({used[name]})"
        out.append(FolderState(p, os.path.realpath(p), f"{name}/" if out else ""))
    return out


class MemoryIndex:
    """Memory and rule files per tier; see the module docstring. Not thread-safe (the store locks)."""

    def __init__(
        self,
        settings: MemorySettings,
        renderer: Renderer,
        home: str,
        global_dir: str,
        exclude: Sequence[str],
        *,
        walk_below: bool | Sequence[str] = True,
    ) -> None:
        self.settings = settings
        self.walk_below = walk_below  # not True: a folder's own files and the sub-directories named (see index_folder)
        self.exclude = exclude_matcher(tuple(exclude)).matches
        self.renderer = renderer
        self.home = home
        self.global_dir = global_dir
        self.global_real = os.path.realpath(global_dir)
        self.names = effective_names(settings.file_names, settings.sources)
        self.formats = enabled_formats(settings.sources)
        self.home_rule_dirs = tuple((d, f) for d, f in HOME_RULE_DIRS if f in {s.format for s in self.formats})
        self.name_set = frozenset(self.names)
        self.markers = tuple(settings.boundary_markers)
        self.folders: list[FolderState] = []
        self.globals: list[Entry] = []
        self.global_candidates: list[str] = []
        self.global_paths: frozenset[str] = frozenset()  # the candidates and their directories
        self.global_dirs: frozenset[str] = frozenset()  # the candidates' directories
        self.home_rules: list[Entry] = []  # user-level rule files, checked against every folder
        self.home_rule_roots: tuple[str, ...] = ()
        self.policy = 0  # bumped whenever what may be imported can have changed
        self.dep_index: dict[str, set[str]] = {}  # dependency path → entry abs paths
        self.by_path: dict[str, Entry] = {}
        # Answers of display() and blocked() per path: pure functions of the folders, their chains and
        # (for blocked) the ignore rules of the current policy. Emptied by refresh_lookups().
        self._displays: dict[str, str] = {}
        self._blocked: dict[tuple[int, str], str | None] = {}
        self._formats: dict[str, RuleFormat | None] = {}  # rel path → rule format (pure: only a size cap empties it)

    # ------------------------------------------------------------------ building

    def load(self) -> None:
        """Index and render everything afresh."""
        self.renderer.clear()
        self.global_real = os.path.realpath(self.global_dir)
        self.load_globals()
        for i in range(len(self.folders)):
            self.load_folder(i)

    def set_folders(self, folders: Sequence[Path | str], loaded: bool) -> None:
        """Replace the folders; folders kept keep their index, new ones are indexed when ``loaded``."""
        old = {f.path: f for f in self.folders}
        self.folders = make_folders(folders)
        self._displays.clear()
        self._blocked.clear()
        for i, folder in enumerate(self.folders):
            previous = old.get(folder.path)
            if previous is not None and previous.prefix == folder.prefix and loaded:
                self.folders[i] = previous
                for entry in previous.entries():
                    entry.folder = i
            elif loaded:
                self.load_folder(i)
        self.refresh_lookups()

    def load_globals(self) -> None:
        candidates: list[str] = []
        if self.settings.read_vendor_globals:
            sources = set(self.settings.sources)
            candidates += [os.path.join(self.home, sub, name) for sub, name, fam in VENDOR_GLOBALS if fam in sources]
        candidates += [os.path.join(self.global_dir, name) for name in self.names]
        self.global_candidates = candidates
        self.global_paths = frozenset(p for c in candidates for p in (c, os.path.dirname(c)))
        self.global_dirs = frozenset(os.path.dirname(c) for c in candidates)
        entries: list[Entry] = []
        for i, path in enumerate(candidates):
            if os.path.lexists(path):
                entries.append(self.rendered(Entry(path, home_display(path, self.home), "global", None, order=(0, i))))
        self.globals = entries
        self.load_home_rules()
        self.refresh_lookups()

    def load_home_rules(self) -> None:
        """User-level rules (``~/.claude/rules``, ``~/.kiro/steering``): rules of every folder."""
        entries: list[Entry] = []
        if self.settings.read_vendor_globals:
            for abs_path, fmt in find_home_rules(self.home, self.home_rule_dirs):
                order = (3, -1, FORMAT_ORDER.index(fmt), abs_path)
                entry = Entry(abs_path, home_display(abs_path, self.home), "rule", None, order=order, rule_format=fmt)
                entry = self.rendered(entry)
                if not entry.rendered.missing:
                    entries.append(entry)
        self.home_rules = entries
        self.home_rule_roots = tuple(os.path.join(self.home, *d.split("/")) for d, _f in self.home_rule_dirs)
        self.refresh_lookups()

    def load_folder(self, i: int) -> None:
        # The walk first: its ignore rules decide which imports the other tiers may inline.
        self.folders[i].exists = os.path.isdir(self.folders[i].path)
        self.reindex(i)
        self.load_upward(i)
        self.load_rules(i)

    def load_upward(self, i: int) -> None:
        folder = self.folders[i]
        folder.exists = os.path.isdir(folder.path)
        folder.chain, folder.refused = upward(folder.path, self.markers) if folder.exists else ([folder.path], None)
        self._displays.clear()  # paths above the folder are shown by their place in the chain
        folder.top_real = os.path.realpath(folder.chain[0])
        entries: list[Entry] = []
        for depth, d in enumerate(folder.chain if folder.exists else ()):
            for n, (path, _name) in enumerate(dir_candidates(d, self.names)):
                if os.path.lexists(path):
                    entry = Entry(path, self.display(path), "workspace", i, order=(1, i, depth, n))
                    entry.rel = posix(os.path.relpath(path, d)) if d == folder.path else ""
                    entries.append(self.rendered(entry))
        folder.workspace = entries
        self.refresh_lookups()

    def reindex(self, i: int) -> None:
        """Walk the folder again (JIT tier); unchanged files render from the cache."""
        folder = self.folders[i]
        folder.index = (
            index_folder(folder.path, self.settings, self.names, walk_below=self.walk_below)
            if folder.exists
            else FolderIndex()
        )
        folder.ignore_sources = frozenset(str(p) for p in ignore_sources(folder.path)) if folder.exists else frozenset()
        self.policy += 1  # ignore rules may have changed: renderings cached under the old ones are stale
        self._sync_jit(i)

    def update_subtree(self, i: int, rel: str) -> SubtreeChange:
        """A directory below the folder root appeared, vanished or was replaced: walk it alone
        (:func:`~.discovery.reindex_subtree`), not the folder, and bring the JIT tier in line."""
        folder = self.folders[i]
        change = reindex_subtree(folder.index, folder.path, rel, self.settings, self.names)
        if change.own_rules:
            self.policy += 1  # an ignore file came or went with it: verdicts inside it moved
        if change:
            self._sync_jit(i)
        return change

    def _sync_jit(self, i: int) -> None:
        """The JIT entries of the folder's index: kept entries keep their rendering (re-rendered
        from the cache), new ones are rendered."""
        folder = self.folders[i]
        old = folder.jit
        jit: dict[str, Entry] = {}
        for f in folder.index.files:
            entry = old.get(f.rel_path)
            if entry is None or entry.abs_path != f.abs_path:
                entry = self._jit_entry(i, f.abs_path, f.rel_path, f.rel_dir)
            entry.ignored = f.ignored
            jit[f.rel_path] = self.rendered(entry)
        folder.jit = jit
        self._group_jit(folder)
        self.refresh_lookups()

    def load_rules(self, i: int) -> None:
        folder = self.folders[i]
        entries: list[Entry] = []
        bases = nested_bases(folder.index.dirs)
        for abs_path, rel, fmt, base in find_rule_files(folder.path, self.formats, bases) if folder.exists else ():
            order = (3, i, FORMAT_ORDER.index(fmt), rel)
            entry = Entry(abs_path, self.display(abs_path), "rule", i, rel, base, order=order, rule_format=fmt)
            entry = self.rendered(entry)
            if not entry.rendered.missing:
                entries.append(entry)
        folder.rules = entries
        self.refresh_lookups()

    def update_jit_file(self, i: int, rel: str) -> None:
        """One memory file below the folder root changed, appeared or vanished."""
        folder = self.folders[i]
        rules, parent_indexed = rules_for(folder.index, rel)
        abs_path = os.path.join(folder.path, *rel.split("/"))
        if not parent_indexed:
            # Its directory is new or ignored: a walk of the top-most new directory tells.
            if rules is not None and not rules.is_ancestor_ignored(rel):
                self.update_subtree(i, rel.rpartition("/")[0])
            return
        if not os.path.lexists(abs_path):
            folder.jit.pop(rel, None)
        else:
            rel_dir, name = rel.rsplit("/", 1)
            entry = folder.jit.get(rel) or self._jit_entry(i, abs_path, rel, governed_dir(rel_dir, name))
            entry.ignored = rules.is_ignored(rel, False) if rules is not None else False
            folder.jit[rel] = self.rendered(entry)
        self._group_jit(folder)
        self.refresh_lookups()

    def rerender(self, entry: Entry) -> bool:
        """Render ``entry`` again; whether its state changed."""
        before = entry.state()
        deps = entry.rendered.deps
        self.rendered(entry)
        if entry.rendered.deps != deps:
            self.refresh_lookups()
        return entry.state() != before

    # ------------------------------------------------------------------ rendering and paths

    def _request(self, entry: Entry) -> RenderRequest:
        return RenderRequest(
            entry.abs_path,
            entry.display,
            entry.rule_format,
            self.allowed_roots(entry),
            entry.folder is not None,
            self.policy,
        )

    def rendered(self, entry: Entry) -> Entry:
        """``entry`` with a fresh rendering (cached when nothing it used changed)."""
        entry.rendered = self.renderer.render(self._request(entry), self.display, self.blocked)
        return entry

    def without_seen(self, entry: Entry, seen: tuple[tuple[str, str], ...]) -> Rendered:
        """How ``entry`` renders when the files of ``seen`` are already in the instruction."""
        return self.renderer.render_without(self._request(entry), entry.rendered, seen, self.display, self.blocked)

    def expand_options(self, abs_path: str, folder: int | None) -> ExpandOptions:
        """How imports of a file at ``abs_path`` (of this folder, None: global) are expanded."""
        roots = self.allowed_roots(Entry(abs_path, "", "global", folder))
        renderer = self.renderer
        return ExpandOptions(
            roots,
            self.home,
            renderer.max_depth,
            renderer.read,
            self.display,
            self.blocked,
            (),
            renderer.max_total_bytes,
            any_owner=folder is None,
        )

    def blocked(self, abs_path: str) -> str | None:
        """Why a file may not be imported: excluded by ``context.exclude`` or ignored by an ignore file."""
        key = (self.policy, abs_path)
        if key not in self._blocked:
            if len(self._blocked) > _MEMO_LIMIT:
                self._blocked.clear()
            self._blocked[key] = self._blocked_now(abs_path)
        return self._blocked[key]

    def _blocked_now(self, abs_path: str) -> str | None:
        for folder in self.folders:
            if abs_path.startswith(folder.prefix_path):
                rel = posix(abs_path[len(folder.prefix_path) :])
                if self.exclude(rel):
                    return EXCLUDED
                rules, _indexed = rules_for(folder.index, rel)
                if rules is not None and (rules.is_ignored(rel, False) or rules.is_ancestor_ignored(rel)):
                    return IGNORED
                return None
        # Above every folder (an import may reach up to the repository's top) or in the global
        # memory directory: the same exclusions and ignore files, from the repository's top down.
        repo = find_repo(os.path.dirname(abs_path))
        if repo is None or not abs_path.startswith(repo.top.rstrip(os.sep) + os.sep):
            return EXCLUDED if self.exclude(os.path.basename(abs_path)) else None
        rel = posix(os.path.relpath(abs_path, repo.top))
        if self.exclude(rel):
            return EXCLUDED
        return IGNORED if is_ignored_below(repo.top, rel) else None

    def allowed_roots(self, entry: Entry) -> tuple[str, ...]:
        """Real paths imports of this entry may resolve into (and the entry itself must lie in)."""
        if entry.folder is not None:
            folder = self.folders[entry.folder]
            return (self.global_real, folder.top_real or folder.real)
        parent = os.path.dirname(entry.abs_path)
        if parent != self.global_dir:
            return (self.global_real, os.path.realpath(parent))
        return (self.global_real,)

    def format_of(self, rel: str) -> RuleFormat | None:
        """:func:`~.rules.rule_format_for`, kept per path: every file event asks it for the same few."""
        if rel not in self._formats:
            if len(self._formats) > _MEMO_LIMIT:
                self._formats.clear()
            self._formats[rel] = rule_format_for(rel)
        return self._formats[rel]

    def display(self, abs_path: str) -> str:
        """Display path: relative to its workspace folder, else ``~/...`` under home, else absolute."""
        shown = self._displays.get(abs_path)
        if shown is None:
            if len(self._displays) > _MEMO_LIMIT:
                self._displays.clear()
            shown = self._displays[abs_path] = self._display_now(abs_path)
        return shown

    def _display_now(self, abs_path: str) -> str:
        best: FolderState | None = None
        for folder in self.folders:
            if is_within(abs_path, [folder.path]) and (best is None or len(folder.path) > len(best.path)):
                best = folder
        if best is not None:
            return best.prefix + posix(os.path.relpath(abs_path, best.path))
        for folder in self.folders:
            if memory_dir_of(abs_path) in folder.chain:
                return folder.prefix + posix(os.path.relpath(abs_path, folder.path))
        return home_display(abs_path, self.home)

    # ------------------------------------------------------------------ lookups

    def entries(self) -> Iterator[Entry]:
        yield from self.globals
        yield from self.home_rules
        for folder in self.folders:
            yield from folder.entries()

    def refresh_lookups(self) -> None:
        """Rebuild the path → entry and dependency → entries maps (and forget the per-path answers)."""
        self._displays.clear()
        self._blocked.clear()
        deps: dict[str, set[str]] = {}
        by_path: dict[str, Entry] = {}
        for entry in self.entries():
            by_path.setdefault(entry.abs_path, entry)
            for dep in (entry.abs_path, entry.rendered.real, *entry.rendered.deps):
                if dep:
                    deps.setdefault(dep, set()).add(entry.abs_path)
        self.dep_index = deps
        self.by_path = by_path

    def watch_roots(self) -> list[Path]:
        """Directories to watch recursively: the workspace folders and the existing global dirs."""
        roots: list[str] = [f.path for f in self.folders if os.path.isdir(f.path)]
        for candidate in self.global_candidates:
            parent = os.path.dirname(candidate)
            if os.path.isdir(parent) and not is_within(parent, roots):
                roots.append(parent)
        for rule_dir in self.home_rule_roots:
            if os.path.isdir(rule_dir) and not is_within(rule_dir, roots):
                roots.append(rule_dir)
        return [Path(r) for r in roots]

    def flat_watch_roots(self) -> list[Path]:
        """Directories worth watching without recursion: the workspace tier above each folder, the
        directories holding ignore files outside a folder (``ignore_sources``), and the nearest
        existing parent of a global dir that does not exist yet (to see it appear)."""
        roots: list[str] = []
        for folder in self.folders:
            roots += [d for d in folder.chain[:-1] if d not in roots and os.path.isdir(d)]
            nested = [os.path.join(d, CLAUDE_SUBDIR) for d in folder.chain[:-1]]
            roots += [d for d in nested if d not in roots and os.path.isdir(d)]
        for folder in self.folders:
            for source in sorted(folder.ignore_sources):
                parent = os.path.dirname(source)
                if parent not in roots and os.path.isdir(parent) and not is_within(parent, [folder.path]):
                    roots.append(parent)
        if not os.path.isdir(self.global_dir):
            parent = os.path.dirname(self.global_dir)
            while parent and not os.path.isdir(parent) and os.path.dirname(parent) != parent:
                parent = os.path.dirname(parent)
            if os.path.isdir(parent) and parent not in roots:
                roots.append(parent)
        return [Path(r) for r in roots]

    def has_entries_under(self, folder: FolderState, rel: str) -> bool:
        prefix = rel + "/"
        return any(r.startswith(prefix) for r in folder.jit) or any(e.rel.startswith(prefix) for e in folder.rules)

    def _jit_entry(self, i: int, abs_path: str, rel: str, rel_dir: str) -> Entry:
        name = rel.rsplit("/", 1)[-1]
        n = self.names.index(name) if name in self.names else len(self.names)
        order = (2, i, tuple(rel_dir.split("/")), n, is_nested_claude(abs_path))
        return Entry(abs_path, self.display(abs_path), "jit", i, rel=rel, rel_dir=rel_dir, order=order)

    @staticmethod
    def _group_jit(folder: FolderState) -> None:
        by_dir: dict[str, list[Entry]] = {}
        for entry in folder.jit.values():
            by_dir.setdefault(entry.rel_dir, []).append(entry)
        folder.jit_by_dir = by_dir
        folder.jit_order = sorted(folder.jit.values(), key=lambda e: e.order)
