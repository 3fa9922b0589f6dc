"""Where memory files are: the upward chain of a workspace folder and its downward index.

* **Upward** (workspace tier): from the folder up to, and including, the nearest directory
  holding a boundary marker (``.git`` by default). No marker above: the folder alone. No
  markers configured: the folder alone.
* **Downward** (JIT tier): every memory file in a sub-directory of the folder, found with
  :func:`context_companion.ignore.walk` (nested ``.gitignore`` and
  ``.context-companion-ignore``, never into directory symlinks). The index also keeps the
  ignore rules of every directory it entered, so later file events can be judged without
  walking again, and a directory created or deleted later is walked alone
  (:func:`reindex_subtree`).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..ignore import ALWAYS_PRUNED, DirListing, IgnoreRules, WalkBudget, ignore_warnings, walk
from ..ownership import find_marker
from ..settings import MemorySettings

log = logging.getLogger(__name__)

CLAUDE_SUBDIR = ".claude"
CLAUDE_NAME = "CLAUDE.md"


def dir_candidates(directory: str, names: Sequence[str]) -> list[tuple[str, str]]:
    """(path, name) of the memory files a directory may hold, in precedence order.

    ``<dir>/.claude/CLAUDE.md`` is project memory exactly like ``<dir>/CLAUDE.md`` (Claude Code
    reads either) and comes right after it.
    """
    out: list[tuple[str, str]] = []
    for name in names:
        out.append((os.path.join(directory, name), name))
        if name == CLAUDE_NAME:
            out.append((os.path.join(directory, CLAUDE_SUBDIR, name), name))
    return out


def governed_dir(rel_dir: str, name: str) -> str:
    """The directory (posix, relative; "" for the folder) a memory file at ``rel_dir/name`` governs."""
    if name == CLAUDE_NAME and (rel_dir == CLAUDE_SUBDIR or rel_dir.endswith("/" + CLAUDE_SUBDIR)):
        return rel_dir[: -len(CLAUDE_SUBDIR)].rstrip("/")
    return rel_dir


def is_nested_claude(path: str) -> bool:
    """Whether an absolute path is a ``.claude/CLAUDE.md`` (it governs the directory above ``.claude``)."""
    return os.path.basename(path) == CLAUDE_NAME and os.path.basename(os.path.dirname(path)) == CLAUDE_SUBDIR


def memory_dir_of(path: str) -> str:
    """The directory whose memory ``path`` is: its parent, or for ``<dir>/.claude/CLAUDE.md``, ``<dir>``."""
    parent = os.path.dirname(path)
    return os.path.dirname(parent) if is_nested_claude(path) else parent


def upward(folder: str, markers: Sequence[str]) -> tuple[list[str], str | None]:
    """Directories of the workspace tier, root → leaf (the folder itself last), and the line that says
    which root was refused as another user's (else None).

    The root is :func:`~context_companion.ownership.find_marker`'s: the nearest folder with a marker, not
    above a ``GIT_CEILING_DIRECTORIES`` folder, and never a marker or folder owned by another user (then,
    like no marker, the folder alone)."""
    found = find_marker(folder, markers)
    if found.root is None:
        return [folder], found.refused  # no marker anywhere above (or another user's): the folder alone
    chain = [folder]
    current = folder
    while current != found.root:
        current = os.path.dirname(current)
        chain.append(current)
    return list(reversed(chain)), None


@dataclass(slots=True)
class IndexedFile:
    abs_path: str
    rel_path: str  # posix, relative to the folder
    rel_dir: str  # the directory it governs (for x/.claude/CLAUDE.md: x)
    ignored: bool  # matched by an ignore file (listed, never included)


@dataclass(slots=True)
class FolderIndex:
    files: list[IndexedFile] = field(default_factory=list)
    dirs: dict[str, IgnoreRules] = field(default_factory=dict)  # rel_dir ("" = root) → rules in force
    # Unindexed dir → relevant (memo, see the store). The directories the walk left out at its cap
    # are entered here as not relevant, so the watcher neither watches nor walks below them.
    verdicts: dict[str, bool] = field(default_factory=dict)
    cut: str | None = None  # the walk stopped at memory.maxWalkDirectories/-Files: what it left out
    _warnings: list[str] | None = None

    def warnings(self) -> list[str]:
        """The walk's cut and the ignore files cut at ``memory.maxIgnorePatterns`` (one line each).
        Computed once per change of ``dirs`` (:func:`index_folder`, :func:`reindex_subtree`): every
        compose asks."""
        if self._warnings is None:
            chains = dict.fromkeys(self.dirs.values())  # each chain once
            self._warnings = ([self.cut] if self.cut else []) + ignore_warnings(chains)
        return self._warnings

    def forget_warnings(self) -> None:
        self._warnings = None


def index_folder(
    folder: str, settings: MemorySettings, names: Sequence[str], *, walk_below: bool | Sequence[str] = True
) -> FolderIndex:
    """Walk ``folder`` once; record memory files below its root and every directory entered.

    ``names``: the memory file names in force (``memory.fileNames`` as the sources read them,
    :func:`~.formats.effective_names`), the same in every tier: a sub-folder's
    ``AGENTS.override.md`` is found exactly like the root's. The walk stops at
    ``memory.maxWalkDirectories`` or ``memory.maxWalkFiles`` (see :func:`_left_out`). ``walk_below``
    other than True lists the folder itself and, of what is below it, only those sub-directories
    (posix, relative, each one's parent first: the chain down to where an agent runs), never a walk:
    ``context-companion hook`` without an editor delivers no other sub-folder's memory, and the walk of a
    big folder would cost it seconds a prompt."""
    index = FolderIndex()
    if walk_below is True:
        budget = WalkBudget(settings.max_walk_directories, settings.max_walk_files)
        listings = walk(Path(folder), max_patterns=settings.max_ignore_patterns, budget=budget)
        _record(index, listings, frozenset(names))
        if budget.left_out:
            _left_out(index, folder, budget)
        return index
    # Not a walk, not even a listing: the ignore files and memory files are looked up by name (a listing of
    # the folder would make the hook's record of what it read move with every file created there).
    rules = IgnoreRules.for_root(Path(folder), max_patterns=settings.max_ignore_patterns)
    index.dirs[""] = rules
    for rel in walk_below or ():
        directory = os.path.join(folder, *rel.split("/"))
        if rules.is_ignored(rel, True) or not _real_dir(directory):
            break
        rules = rules.descend(rel, directory)
        index.dirs[rel] = rules
        for path, name in dir_candidates(directory, names):
            if _file_entry(path):
                rel_dir = posix_rel(os.path.dirname(path), folder)
                governs = governed_dir(rel_dir, name)
                file_rel = rel_dir + "/" + name
                index.files.append(IndexedFile(path, file_rel, governs, rules.is_ignored(file_rel, False)))
    return index


def _real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _file_entry(path: str) -> bool:
    """Something a walk would list as a file: present, not a directory (a link to a file counts)."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def posix_rel(path: str, folder: str) -> str:
    rel = os.path.relpath(path, folder)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _record(index: FolderIndex, listings: Iterable[DirListing], wanted: frozenset[str]) -> list[str]:
    """Add the directories and memory files of ``listings`` to ``index``; the directories added."""
    files = index.files
    dirs = index.dirs
    added: list[str] = []
    for listing in listings:
        rel_dir = listing.rel_dir
        dirs[rel_dir] = listing.rules
        added.append(rel_dir)
        if not rel_dir:
            continue  # the folder's own files are the workspace tier
        for entry in listing.files:
            if entry.name in wanted:
                governs = governed_dir(rel_dir, entry.name)
                if not governs:
                    continue  # .claude/CLAUDE.md of the folder itself: the workspace tier
                rel = rel_dir + "/" + entry.name
                files.append(IndexedFile(entry.path, rel, governs, listing.rules.is_ignored(rel, False)))
    return added


@dataclass(frozen=True, slots=True)
class SubtreeChange:
    """What :func:`reindex_subtree` did: the directories dropped and added (posix, relative), and
    whether any of them had ignore rules of its own (verdicts elsewhere may have moved)."""

    dropped: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    own_rules: bool = False

    def __bool__(self) -> bool:
        return bool(self.dropped or self.added)


def reindex_subtree(
    index: FolderIndex, folder: str, rel: str, settings: MemorySettings, names: Sequence[str]
) -> SubtreeChange:
    """A directory below the folder root (``rel``, posix) appeared, vanished or was replaced: bring
    ``index`` in line by walking that directory alone, never the whole folder.

    What was indexed at ``rel`` and below is dropped; then, when ``rel`` is a directory (not a
    symlink) that the walk of the folder would enter, it is walked with its parent's rules. When
    its parent was not indexed either (``mkdir -p a/b/c``), the top-most new directory is walked.
    The result equals what :func:`index_folder` would give now for that part of the tree.
    """
    rel = _top_unindexed(index, rel)
    if not rel:
        return SubtreeChange()
    prefix = rel + "/"
    dropped: list[str] = []
    own_rules = False
    if rel in index.dirs:  # only an indexed directory can have indexed directories and files below it
        dropped = [d for d in index.dirs if d == rel or d.startswith(prefix)]
        own_rules = any(index.dirs[d] is not index.dirs[_parent(d)] for d in dropped if _parent(d) in index.dirs)
        for d in dropped:
            del index.dirs[d]
        index.files[:] = [f for f in index.files if not f.rel_path.startswith(prefix)]
    added: list[str] = []
    parent_rules = index.dirs.get(_parent(rel))
    path = os.path.join(folder, *rel.split("/"))
    name = rel.rpartition("/")[2]
    if (
        parent_rules is not None
        and name not in ALWAYS_PRUNED
        and os.path.isdir(path)
        and not os.path.islink(path)
        and not parent_rules.is_ignored(rel, True)
    ):
        listings = walk(Path(folder), max_patterns=settings.max_ignore_patterns, below=rel, parent_rules=parent_rules)
        added = _record(index, listings, frozenset(names))
        own_rules = own_rules or any(index.dirs[d] is not index.dirs[_parent(d)] for d in added)
    for key in [k for k in index.verdicts if k == rel or k.startswith(prefix)]:
        del index.verdicts[key]  # memoised verdicts on directories that were not indexed, here only
    if own_rules:
        index.forget_warnings()  # the same chains are in force otherwise: the same warnings
    return SubtreeChange(tuple(dropped), tuple(added), own_rules)


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _top_unindexed(index: FolderIndex, rel: str) -> str:
    """``rel``, or, when its parent was not indexed, the top-most ancestor below an indexed one."""
    parts = rel.split("/")
    i = len(parts) - 1
    while i > 0 and "/".join(parts[:i]) not in index.dirs:
        i -= 1
    return "/".join(parts[: i + 1])


def _left_out(index: FolderIndex, folder: str, budget: WalkBudget) -> None:
    """Record a walk stopped at its cap: the directories it did not enter are not relevant (the
    watcher skips them too) and one warning, logged and kept for the instruction's and
    ``showMemory``'s warnings, names the setting and the first of them."""
    for rel in budget.left_out:
        index.verdicts[rel] = False
    cap = (
        f"memory.maxWalkDirectories ({budget.max_dirs:,} directories)"
        if budget.dirs >= budget.max_dirs
        else f"memory.maxWalkFiles ({budget.max_files:,} files)"
    )
    shown = ", ".join(os.path.join(folder, *rel.split("/")) for rel in budget.left_out[:3])
    more = len(budget.left_out) - 3
    index.cut = (
        f"workspace folder {folder}: the search for memory files stopped at {cap}; "
        f"{len(budget.left_out):,} directories were not searched, e.g. {shown}"
        + (f" and {more:,} more" if more > 0 else "")
        + " (raise the setting, or open a smaller folder)"
    )
    log.warning("%s", index.cut)


def rules_for(index: FolderIndex, rel_path: str) -> tuple[IgnoreRules | None, bool]:
    """Ignore rules of the directory holding ``rel_path``, and whether that directory was indexed.

    When the parent directory was not indexed, returns the rules of the deepest indexed
    ancestor and False.
    """
    parts = rel_path.split("/")
    i = len(parts) - 1
    while i > 0 and "/".join(parts[:i]) not in index.dirs:
        i -= 1
    rules = index.dirs.get("/".join(parts[:i]))
    return rules, i == len(parts) - 1
