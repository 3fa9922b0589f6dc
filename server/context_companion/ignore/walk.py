"""The walk: :func:`walk` yields each directory reached (:class:`DirListing`) with the rules in
force there, pruning ignored directories, never following directory symlinks, and stopping at a
:class:`WalkBudget` when one is given."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .patterns import ALWAYS_PRUNED, DEFAULT_MAX_PATTERNS, IGNORE_FILE_NAMES
from .rules import IgnoreRules

# --------------------------------------------------------------------------- the walk


@dataclass(slots=True)
class DirListing:
    """One directory reached by :func:`walk`."""

    rel_dir: str  # posix path from the root, "" for the root
    abs_dir: str
    rules: IgnoreRules
    files: list[os.DirEntry[str]]  # not matched against the rules: match what you need
    dirs: list[str]  # names of the sub-directories that will be entered (not ignored)


@dataclass(slots=True)
class WalkBudget:
    """How much one walk may list, and, once it stopped early, what it left out.

    The walk lists a directory only while fewer than ``max_dirs`` directories and ``max_files``
    files were listed (so the last directory may take the files past the cap). ``left_out``: the
    directories it would have entered next, shallowest first, none of them listed."""

    max_dirs: int
    max_files: int
    dirs: int = 0
    files: int = 0
    left_out: list[str] = field(default_factory=list)  # rel dirs (posix)

    def spent(self) -> bool:
        return self.dirs >= self.max_dirs or self.files >= self.max_files


def walk(
    root: Path,
    *,
    pruned_names: frozenset[str] = ALWAYS_PRUNED,
    max_patterns: int = DEFAULT_MAX_PATTERNS,
    below: str = "",
    parent_rules: IgnoreRules | None = None,
    budget: WalkBudget | None = None,
) -> Iterator[DirListing]:
    """Breadth-first walk of ``root`` honouring ignore files; never follows directory symlinks.

    Unreadable directories are skipped silently. Sub-directories in ``pruned_names`` (``.git``)
    are never entered. The caller may remove names from ``listing.dirs`` to prune further.
    ``max_patterns`` caps the patterns read from each ignore file. With a ``budget`` the walk stops
    once it is spent and records the directories it did not enter; breadth first, so a folder too
    large to walk whole (``/``, a home directory) is still searched near its top everywhere.

    ``below`` (a posix path relative to ``root``) walks only that sub-directory, with
    ``parent_rules``, the rules in force in its parent (as an earlier walk of ``root`` found them):
    the listings are those a walk of ``root`` would give for it. The caller has checked that the
    sub-directory itself is not ignored.
    """
    root_str = os.fspath(root)
    start = os.path.join(root_str, *below.split("/")) if below else root_str
    queue: deque[tuple[str, str, IgnoreRules | None]] = deque([(below, start, parent_rules if below else None)])
    while queue:
        if budget is not None and budget.spent():
            budget.left_out.extend(rel for rel, _abs, _rules in queue)
            return
        rel_dir, abs_dir, parent_rules = queue.popleft()
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
        if budget is not None:
            budget.dirs += 1
            budget.files += len(files)
        listing = DirListing(rel_dir, abs_dir, rules, files, dirs)
        yield listing
        for name in sorted(listing.dirs):
            queue.append((prefix + name, os.path.join(abs_dir, name), rules))
