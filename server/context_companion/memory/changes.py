"""File events → index updates → a :class:`~.model.ChangeSummary` of what changed.

:func:`plan_changes` sorts changed paths into the work they need (re-render one file, reload the
upward chain, walk a folder again, reload rules or globals); :func:`apply_plan` does that work on
the :class:`~.index.MemoryIndex` and compares the state of the entries it touched before and
after. :func:`is_relevant` answers the watcher's "does this path matter" cheaply.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..ignore import IGNORE_FILE_NAMES
from .discovery import CLAUDE_SUBDIR, memory_dir_of
from .formats import FORMATS
from .index import Entry, FolderState, MemoryIndex
from .model import ChangedFile, ChangeKind, ChangeSummary, Tier
from .paths import is_within, norm, posix
from .rules import RULE_DIR_PREFIXES, in_rule_dir, rule_format_for

NESTED_CLAUDE = ".claude/CLAUDE.md"  # workspace tier, like CLAUDE.md
RULE_DIRS = frozenset(f.path for f in FORMATS if f.kind != "file")
_RECURSIVE_RULE_DIRS = [f.path.split("/") for f in FORMATS if f.recursive]


@dataclass(slots=True)
class ChangePlan:
    """The work a batch of changed paths needs."""

    structural: bool = False  # ignore files, markers, directories: the instruction's frame may move
    rewatch: bool = False  # ignore files, markers: the directories the watcher skips may differ
    reglobal: bool = False
    reupward: set[int] = field(default_factory=set)
    reindex: set[int] = field(default_factory=set)
    rerules: set[int] = field(default_factory=set)
    jit_files: set[tuple[int, str]] = field(default_factory=set)
    subtrees: set[tuple[int, str]] = field(default_factory=set)  # directories created, deleted or moved
    rerender: set[str] = field(default_factory=set)  # entries whose file or an import changed

    @property
    def reloads(self) -> bool:
        return bool(self.reglobal or self.reupward or self.reindex or self.rerules or self.jit_files or self.subtrees)


def plan_changes(index: MemoryIndex, paths: Iterable[str | Path]) -> ChangePlan:
    plan = ChangePlan()
    global_dirs = index.global_dirs
    for raw in paths:
        path = norm(raw)
        index.renderer.forget(path)
        if path in index.global_candidates or path in global_dirs or index.global_dir.startswith(path + os.sep):
            plan.reglobal = True
        if any(path == r or path.startswith(r + os.sep) or r.startswith(path + os.sep) for r in index.home_rule_roots):
            plan.reglobal = True  # a user-level rule file or its directory
        plan.rerender.update(index.dep_index.get(path, ()))
        for i, folder in enumerate(index.folders):
            if path in folder.ignore_sources:
                plan.reindex.add(i)  # an ignore file above the folder: verdicts inside may differ
                plan.structural = plan.rewatch = True
            elif is_within(path, [folder.path]):
                _plan_in_folder(index, plan, i, folder, path)
            elif memory_dir_of(path) in folder.chain[:-1] or os.path.dirname(path) in folder.chain[:-1]:
                name = os.path.basename(path)
                if name == CLAUDE_SUBDIR:
                    plan.reupward.add(i)  # may hold a CLAUDE.md: watch it (flat roots) and look inside
                elif name in index.markers:
                    plan.reupward.add(i)
                    plan.structural = plan.rewatch = True
                elif name in index.name_set and _presence_changed(index, path):
                    plan.reupward.add(i)
    return plan


def _plan_in_folder(index: MemoryIndex, plan: ChangePlan, i: int, folder: FolderState, path: str) -> None:
    if path == folder.path:
        plan.reindex.add(i)
        plan.structural = True
        return
    if not relevant_in_folder(index, folder, path):
        return  # e.g. inside an ignored directory: nothing to re-read
    rel = posix(path[len(folder.prefix_path) :])
    parts = rel.split("/")
    name = parts[-1]
    if parts[0] in RULE_DIR_PREFIXES or index.format_of(rel) is not None:
        plan.rerules.add(i)
    if (name in IGNORE_FILE_NAMES and len(parts) == 1) or rel == ".git/info/exclude":
        plan.reindex.add(i)
        plan.structural = plan.rewatch = True
    elif name in IGNORE_FILE_NAMES:
        # Its verdicts hold below its own directory only: walk that again, not the folder.
        _plan_subtree(index, plan, i, rel.rpartition("/")[0], os.path.dirname(path))
        plan.rewatch = True
    elif len(parts) == 1 and name in index.markers:
        plan.reupward.add(i)
        plan.structural = plan.rewatch = True
    elif name in index.name_set and not _is_dir(path, mode := _lstat_mode(path)):
        if (path in index.by_path) == (mode is not None):
            return  # was and is there (re-rendered through dep_index), or was not and is not
        if len(parts) == 1 or rel == NESTED_CLAUDE:
            plan.reupward.add(i)
        else:
            plan.jit_files.add((i, rel))
    elif parts[0] == ".git":
        return
    elif os.path.isdir(path) or rel in folder.index.dirs or index.has_entries_under(folder, rel):
        _plan_subtree(index, plan, i, rel, path)  # a directory created, deleted or moved


def _plan_subtree(index: MemoryIndex, plan: ChangePlan, i: int, rel: str, path: str) -> None:
    """Walk this directory alone (a walk of the folder costs ~0.7 s on a tree of 20,000
    directories); what the memory imports from inside it renders again."""
    plan.subtrees.add((i, rel))
    plan.structural = True
    if rel == CLAUDE_SUBDIR:
        plan.reupward.add(i)  # the folder's own .claude/CLAUDE.md is workspace memory
    inside = path + os.sep
    for dep, owners in index.dep_index.items():
        if dep.startswith(inside):
            plan.rerender.update(owners)


def _lstat_mode(path: str) -> int | None:
    """The mode ``lstat`` gives, None when nothing is there (not even a dangling link)."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _is_dir(path: str, mode: int | None) -> bool:
    """``os.path.isdir(path)`` from its ``lstat`` mode: one system call for the usual plain file."""
    if mode is None:
        return False
    return stat.S_ISDIR(mode) or (stat.S_ISLNK(mode) and os.path.isdir(path))


def _presence_changed(index: MemoryIndex, path: str) -> bool:
    """Whether a memory file appeared or vanished; a file that was and is there is only re-rendered
    (it is in ``dep_index``, so the plan re-renders it already)."""
    return (path in index.by_path) != os.path.lexists(path)


def apply_plan(index: MemoryIndex, plan: ChangePlan) -> tuple[ChangedFile, ...]:
    """Do the work of ``plan``; the files whose state changed, in path order."""
    before = _states(index.entries()) if plan.reloads else {}
    if plan.reglobal:
        index.load_globals()
    for i in sorted(plan.reupward - plan.reindex):
        index.load_upward(i)
    for i in sorted(plan.reindex):
        index.load_folder(i)
    rerules = set(plan.rerules)
    for i, rel in _outermost(plan.subtrees):
        if i not in plan.reindex:
            change = index.update_subtree(i, rel)
            if any(in_rule_dir(d) for d in (*change.dropped, *change.added)):
                rerules.add(i)  # a rule directory, or a nested one's sub-folder, came or went
    for i in sorted(rerules - plan.reindex):
        index.load_rules(i)
    for i, rel in sorted(plan.jit_files):
        if i not in plan.reindex:
            index.update_jit_file(i, rel)
    changed: dict[str, ChangedFile] = {}
    if plan.reloads:
        after = _states(index.entries())
        for key in set(before) | set(after):
            if before.get(key) != after.get(key):
                display, tier, _state = after.get(key) or before[key]
                changed[key] = ChangedFile(display, key, tier)
    for owner in plan.rerender:
        entry = index.by_path.get(owner)
        if entry is not None and owner not in changed and index.rerender(entry):
            changed[owner] = ChangedFile(entry.display, owner, entry.tier)
    return tuple(sorted(changed.values(), key=lambda c: c.path))


def _outermost(subtrees: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """The directories of ``subtrees`` not below another one of the same folder (one walk covers them)."""
    out: list[tuple[int, str]] = []
    for i, rel in sorted(subtrees):
        if not any(j == i and rel.startswith(top + "/") for j, top in out):
            out.append((i, rel))
    return out


def change_kind(plan: ChangePlan, changed: tuple[ChangedFile, ...]) -> ChangeKind | None:
    if plan.structural:
        return "workspaceChanged"
    if not changed:
        return None
    if {c.tier for c in changed} == {"rule"}:
        return "rulesChanged"
    return "memoryChanged"


def summarize(plan: ChangePlan, changed: tuple[ChangedFile, ...], watch_changed: bool) -> ChangeSummary:
    paths = tuple(sorted({c.path for c in changed}))
    return ChangeSummary(paths, change_kind(plan, changed), watch_changed, changed)


def _states(entries: Iterable[Entry]) -> dict[str, tuple[str, Tier, tuple[Any, ...]]]:
    return {e.abs_path: (e.display, e.tier, e.state()) for e in entries}


# --------------------------------------------------------------------------- relevance


def is_relevant(index: MemoryIndex, norm_path: str) -> bool:
    """Would a change to this path matter (memory, rule, ignore or imported file, or a directory)?"""
    if norm_path in index.dep_index or norm_path in index.global_paths:
        return True
    if index.global_dir.startswith(norm_path + os.sep):
        return True  # a parent of the global dir appeared or vanished (see flat_watch_roots)
    if any(norm_path.startswith(r + os.sep) or norm_path == r for r in index.home_rule_roots):
        return True
    for folder in index.folders:
        if norm_path == folder.path or norm_path in folder.ignore_sources:
            return True
        if norm_path.startswith(folder.prefix_path):
            if relevant_in_folder(index, folder, norm_path):
                return True
            continue
        if os.path.dirname(norm_path) in folder.chain[:-1]:
            name = os.path.basename(norm_path)
            if name in index.name_set or name in index.markers or name == CLAUDE_SUBDIR:
                return True
        if memory_dir_of(norm_path) in folder.chain[:-1] and os.path.basename(norm_path) in index.name_set:
            return True
    return False


Entered = tuple[frozenset[str], tuple[str, ...]]


def always_entered(index: MemoryIndex) -> Entered:
    """What the watcher enters whatever the ignore rules say: each directory in a workspace folder
    on the way to a file the memory reads (an import or a symlinked memory file in an ignored tree,
    an ignore source such as ``.git/info/exclude``, a global memory file), and, whole, the global
    directories and the user's rule directories (a folder such as your home may hide them)."""
    ways: set[str] = set()
    files = [*index.dep_index, *index.global_paths, *(s for f in index.folders for s in f.ignore_sources)]
    for folder in index.folders:
        for path in files:
            directory = os.path.dirname(path)
            while directory.startswith(folder.prefix_path) and directory not in ways:
                ways.add(directory)
                directory = os.path.dirname(directory)
    return frozenset(ways), (*index.global_dirs, *index.home_rule_roots)


def entered_moved(index: MemoryIndex, before: Entered, after: Entered) -> bool:
    """Whether the watches must be rebuilt because :func:`always_entered` changed: a directory it
    adds or drops that the ignore rules alone would not enter (a new memory file in a visible
    folder, the usual case, needs nothing: its directories are watched anyway; a deleted one's
    watches went with it)."""
    if before[1] != after[1]:
        return True
    nothing: Entered = (frozenset(), ())
    return any(os.path.isdir(d) and not descends_into(index, d, nothing) for d in before[0] ^ after[0])


def descends_into(index: MemoryIndex, norm_path: str, entered: Entered) -> bool:
    """Should the watcher watch (and walk) this directory? What :func:`always_entered` lists; then,
    in workspace folders, the directories :func:`relevant_in_folder` keeps for one of them (not
    ignored, not ``.git``; a folder nested in another's ignored tree keeps its own); anywhere else:
    all."""
    ways, whole = entered
    if norm_path in ways or any(norm_path == d or norm_path.startswith(d + os.sep) for d in whole):
        return True
    inside = [f for f in index.folders if norm_path.startswith(f.prefix_path)]
    # Asked once for every directory of the tree: not worth remembering (20,000 paths on a big tree).
    return not inside or any(relevant_in_folder(index, f, norm_path, remember=False) for f in inside)


def relevant_in_folder(index: MemoryIndex, folder: FolderState, norm_path: str, *, remember: bool = True) -> bool:
    rel = posix(norm_path[len(folder.prefix_path) :])
    parts = rel.split("/")
    name = parts[-1]
    fmt = index.format_of(rel) if remember else rule_format_for(rel)
    if fmt is not None or rel == ".git/info/exclude":
        return True
    if (len(parts) == 1 and name in RULE_DIR_PREFIXES) or rel in RULE_DIRS:
        return True  # a rule directory itself (created, deleted, renamed)
    if len(parts) > 2 and "/".join(parts[:2]) in RULE_DIRS:
        # Inside a rule directory only rule files (and, for the recursive ones, sub-directories) count.
        recursive = parts[:2] in _RECURSIVE_RULE_DIRS
        return recursive and (os.path.isdir(norm_path) or index.has_entries_under(folder, rel))
    if len(parts) == 1 and name in index.markers:
        return True
    if parts[0] == ".git":
        return False  # git's own churn
    dirs = folder.index.dirs
    rules = dirs.get(rel.rpartition("/")[0])
    if rules is None:
        return _unindexed_verdict(folder, parts)
    if name in IGNORE_FILE_NAMES or name in index.name_set or rel in dirs:
        return True
    if folder.index.verdicts.get(rel) is False:
        return False  # left out by the walk at its cap (memory.maxWalkDirectories/-Files)
    return os.path.isdir(norm_path) and not rules.is_ignored(rel, True)


def _unindexed_verdict(folder: FolderState, parts: list[str]) -> bool:
    """Inside a directory not indexed: a new one (relevant) or an ignored one (not).

    The verdict on its top-most unindexed directory is memoised until the next walk.
    """
    dirs = folder.index.dirs
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


def classify(index: MemoryIndex, norm_path: str) -> tuple[Tier, int | None, str, Any] | None:
    """(tier, folder index, rel path, rule format) of a memory or rule file, or None."""
    if norm_path in index.global_candidates:
        return ("global", None, "", None)
    if (
        not index.global_candidates  # before load(): the global names are known anyway
        and os.path.dirname(norm_path) == index.global_dir
        and os.path.basename(norm_path) in index.name_set
    ):
        return ("global", None, "", None)
    for i, folder in enumerate(index.folders):
        if is_within(norm_path, [folder.path]) and norm_path != folder.path:
            rel = posix(os.path.relpath(norm_path, folder.path))
            fmt = index.format_of(rel)
            if fmt is not None:
                return ("rule", i, rel, fmt)
            parts = rel.split("/")
            if parts[-1] in index.name_set:
                return ("workspace" if len(parts) == 1 or rel == NESTED_CLAUDE else "jit", i, rel, None)
            continue
        if memory_dir_of(norm_path) in folder.chain[:-1] and os.path.basename(norm_path) in index.name_set:
            return ("workspace", i, "", None)
    return None
