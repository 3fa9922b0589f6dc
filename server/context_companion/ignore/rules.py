"""The rules in force in one directory: :class:`IgnoreRules`, the chain of ignore files from the
global excludes and ``info/exclude`` through every directory from the repository root down."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .git import _ancestor_dirs, find_repo, global_excludes_path
from .patterns import DEFAULT_MAX_PATTERNS, IGNORE_FILE_NAMES, IgnoreFile, load_ignore_file

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
