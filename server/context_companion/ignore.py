"""Gitignore-aware walking of a workspace folder (pathspec does the matching).

One walker serves the memory index and the folder tree of the environment context, so both
agree on what is ignored:

* ``.gitignore`` files at every level and ``.context-companion-ignore`` files (same syntax),
  plus ``.git/info/exclude`` at the root; deeper files override shallower ones, and the last
  matching pattern wins, as in git;
* symlinked directories are never entered (so a symlink loop cannot trap the walk, and the
  walk never leaves the folder);
* only directories are matched during the walk (to prune); callers match the few files they
  care about with :meth:`IgnoreRules.is_ignored`, which keeps the walk close to a bare
  ``os.scandir`` loop.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

IGNORE_FILE_NAMES: tuple[str, ...] = (".gitignore", ".context-companion-ignore")
ALWAYS_PRUNED: frozenset[str] = frozenset({".git"})


def _read_lines(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()
    except OSError:
        return []


class IgnoreRules:
    """The ignore patterns in force in one directory: a chain of (prefix, spec) pairs."""

    __slots__ = ("_chain",)

    def __init__(self, chain: tuple[tuple[str, GitIgnoreSpec], ...] = ()) -> None:
        self._chain = chain

    @classmethod
    def for_root(cls, root: Path, names: set[str] | None = None) -> IgnoreRules:
        """Rules of a workspace folder root (its ignore files and ``.git/info/exclude``)."""
        rules = cls()
        exclude = root / ".git" / "info" / "exclude"
        if exclude.is_file():
            lines = _read_lines(exclude)
            if any(line.strip() and not line.startswith("#") for line in lines):
                rules = IgnoreRules((("", GitIgnoreSpec.from_lines(lines)),))
        return rules.descend("", root, names)

    def descend(self, rel_dir: str, abs_dir: Path | str, names: set[str] | None = None) -> IgnoreRules:
        """Rules inside ``abs_dir`` (``rel_dir`` is its posix path from the root, "" for the root).

        ``names`` are the entry names of that directory when already known (saves a stat).
        """
        chain = self._chain
        for ignore_name in IGNORE_FILE_NAMES:
            if names is not None and ignore_name not in names:
                continue
            path = Path(abs_dir) / ignore_name
            if names is None and not path.is_file():
                continue
            lines = _read_lines(path)
            if any(line.strip() and not line.lstrip().startswith("#") for line in lines):
                prefix = rel_dir + "/" if rel_dir else ""
                chain = chain + ((prefix, GitIgnoreSpec.from_lines(lines)),)
        return self if chain is self._chain else IgnoreRules(chain)

    def is_ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether ``rel_path`` (posix, relative to the root) is ignored."""
        verdict: bool | None = None
        probe = rel_path + "/" if is_dir else rel_path
        for prefix, spec in self._chain:
            if prefix and not probe.startswith(prefix):
                continue
            include = _check(spec, probe[len(prefix) :])
            if include is not None:
                verdict = include
        return bool(verdict)

    def is_ancestor_ignored(self, rel_path: str) -> bool:
        """Whether any directory above ``rel_path`` (or the path itself as a file) is ignored."""
        parts = rel_path.split("/")
        for i in range(1, len(parts)):
            if self.is_ignored("/".join(parts[:i]), True):
                return True
        return self.is_ignored(rel_path, False)


_PREFILTERS: dict[int, tuple[GitIgnoreSpec, re.Pattern[str] | None]] = {}
_NAMED_GROUP = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


def _prefilter(spec: GitIgnoreSpec) -> re.Pattern[str] | None:
    """One regex that matches whenever any of the spec's patterns does (None: cannot build one)."""
    hit = _PREFILTERS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    try:
        parts = [
            _NAMED_GROUP.sub("(?:", p.regex.pattern)
            for p in spec.patterns
            if p.include is not None and p.regex is not None
        ]
        combined = re.compile("|".join(f"(?:{part})" for part in parts)) if parts else None
    except (AttributeError, re.error):
        combined = None
    if len(_PREFILTERS) > 1024:
        _PREFILTERS.clear()
    _PREFILTERS[id(spec)] = (spec, combined)
    return combined


def _check(spec: GitIgnoreSpec, path: str) -> bool | None:
    """``spec.check_file(path).include`` for an already normalised posix path.

    Most paths match no pattern at all: one combined regex answers that in a single search.
    When something matches, pathspec decides (directory versus file patterns, negation), called
    through its backend to skip re-normalising the path. Falls back to the public API if the
    backend is not there.
    """
    prefilter = _prefilter(spec)
    if prefilter is not None and prefilter.search(path) is None:
        return None
    backend = getattr(spec, "_backend", None)
    if backend is not None:
        return backend.match_file(path)[0]
    return spec.check_file(path).include


@dataclass(slots=True)
class DirListing:
    """One directory reached by :func:`walk`."""

    rel_dir: str  # posix path from the root, "" for the root
    abs_dir: str
    rules: IgnoreRules
    files: list[os.DirEntry[str]]  # not matched against the rules: match what you need
    dirs: list[str]  # names of the sub-directories that will be entered (not ignored)


def walk(root: Path, *, pruned_names: frozenset[str] = ALWAYS_PRUNED) -> Iterator[DirListing]:
    """Depth-first walk of ``root`` honouring ignore files; never follows directory symlinks.

    Unreadable directories are skipped silently. Sub-directories in ``pruned_names`` (``.git``)
    are never entered. The caller may remove names from ``listing.dirs`` to prune further.
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
            rules = IgnoreRules.for_root(Path(abs_dir), names)
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
