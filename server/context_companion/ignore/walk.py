"""The walk: :func:`walk` yields each directory reached (:class:`DirListing`) with the rules in
force there, pruning ignored directories and never following directory symlinks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
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


def walk(
    root: Path,
    *,
    pruned_names: frozenset[str] = ALWAYS_PRUNED,
    max_patterns: int = DEFAULT_MAX_PATTERNS,
    below: str = "",
    parent_rules: IgnoreRules | None = None,
) -> Iterator[DirListing]:
    """Depth-first walk of ``root`` honouring ignore files; never follows directory symlinks.

    Unreadable directories are skipped silently. Sub-directories in ``pruned_names`` (``.git``)
    are never entered. The caller may remove names from ``listing.dirs`` to prune further.
    ``max_patterns`` caps the patterns read from each ignore file.

    ``below`` (a posix path relative to ``root``) walks only that sub-directory, with
    ``parent_rules``, the rules in force in its parent (as an earlier walk of ``root`` found them):
    the listings are those a walk of ``root`` would give for it. The caller has checked that the
    sub-directory itself is not ignored.
    """
    root_str = os.fspath(root)
    start = os.path.join(root_str, *below.split("/")) if below else root_str
    stack: list[tuple[str, str, IgnoreRules | None]] = [(below, start, parent_rules if below else None)]
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
