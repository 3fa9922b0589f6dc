"""Floors: the least work that could produce a figure, measured in the same run.

* :func:`pruned_walk` — a plain ``os.scandir`` walk of a tree, pruned by its root ``.gitignore``
  (pathspec) and never entering ``.git`` or symlinked directories; it notes the memory files it
  passes. Nested ``.gitignore`` files are not read: that is the floor, not a correct index.
* :func:`plain_folder_tree` — the first ``max_items`` entries of a breadth-first listing pruned the
  same way, rendered one per line.
"""

from __future__ import annotations

import os
from pathlib import Path

from pathspec import GitIgnoreSpec

from .generate import MEMORY_NAMES


def root_spec(root: Path) -> GitIgnoreSpec:
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    return GitIgnoreSpec.from_lines(lines)


def pruned_walk(root: Path, names: tuple[str, ...] = MEMORY_NAMES) -> tuple[int, list[str]]:
    """Walk ``root``; returns (files seen, memory files seen as posix relative paths).

    Only directories are matched against the root ``.gitignore`` (to prune), and files only when
    their name is a memory file name: the same division of work as ``context_companion.ignore.walk``.
    """
    spec = root_spec(root)
    wanted = frozenset(names)
    files = 0
    found: list[str] = []
    stack = [("", os.fspath(root))]
    while stack:
        rel_dir, abs_dir = stack.pop()
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError:
            continue
        prefix = rel_dir + "/" if rel_dir else ""
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                rel = prefix + entry.name
                if entry.name == ".git" or spec.match_file(rel + "/"):
                    continue
                stack.append((rel, entry.path))
            else:
                files += 1
                if entry.name in wanted and not spec.match_file(prefix + entry.name):
                    found.append(prefix + entry.name)
    return files, found


def plain_folder_tree(root: Path, max_items: int = 200) -> str:
    """A breadth-first listing of at most ``max_items`` entries, one ``rel/path`` per line."""
    spec = root_spec(root)
    lines: list[str] = []
    queue = [("", os.fspath(root))]
    head = 0
    while head < len(queue) and len(lines) < max_items:
        rel_dir, abs_dir = queue[head]
        head += 1
        try:
            with os.scandir(abs_dir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        prefix = rel_dir + "/" if rel_dir else ""
        for entry in entries:
            if len(lines) >= max_items:
                break
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name == ".git" or spec.match_file(rel + "/"):
                    continue
                lines.append(rel + "/")
                queue.append((rel, entry.path))
            elif not spec.match_file(rel):
                lines.append(rel)
    return "\n".join(lines)
