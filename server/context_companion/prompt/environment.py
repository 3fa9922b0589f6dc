"""The environment context: date, platform, workspace folders, a temp dir and a folder tree."""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ..ignore import IgnoreRules

# Shown as ``name/...`` and never entered: big, generated or internal folders.
OPAQUE_DIRS: frozenset[str] = frozenset({".git", "node_modules", "__pycache__", "dist", ".venv"})


@dataclass(slots=True)
class _Node:
    name: str
    is_dir: bool
    children: list[_Node] = field(default_factory=list)
    opaque: bool = False  # shown as name/... and not entered
    explored: bool = False
    truncated: bool = False  # some entries were left out for the item limit


def folder_tree(root: Path, max_items: int = 200) -> str:
    """A breadth-first tree of ``root`` with at most ``max_items`` entries.

    Ignored entries (``.gitignore`` at every level, ``.context-companion-ignore``) are left out;
    the :data:`OPAQUE_DIRS` are shown as ``name/...``; folders whose content did not fit end with
    a ``...`` line. Entries are sorted folders first, then by name, so the text is deterministic.
    """
    root = Path(root)
    top = _Node(root.name or str(root), True)
    if max_items <= 0:
        return ""
    queue: deque[tuple[_Node, str, str, IgnoreRules | None]] = deque([(top, "", os.fspath(root), None)])
    count = 0
    full = False
    while queue and not full:
        node, rel, abs_dir, parent_rules = queue.popleft()
        node.explored = True
        listed = _list_dir(abs_dir, rel, parent_rules)
        if listed is None:
            continue
        entries, rules = listed
        prefix = rel + "/" if rel else ""
        for name, is_dir in entries:
            if name in OPAQUE_DIRS and is_dir:
                child = _Node(name, True, opaque=True)
            else:
                if name in (".git",):
                    continue
                if rules.is_ignored(prefix + name, is_dir):
                    continue
                child = _Node(name, is_dir)
            if count >= max_items:
                node.truncated = True
                full = True
                break
            node.children.append(child)
            count += 1
            if child.is_dir and not child.opaque:
                queue.append((child, prefix + name, os.path.join(abs_dir, name), rules))
    lines = [os.path.join(os.fspath(root), "")]  # "/x/", and "/" (not "//") for the root folder
    _render(top, "", lines)
    return "\n".join(lines)


def _list_dir(
    abs_dir: str, rel: str, parent_rules: IgnoreRules | None
) -> tuple[list[tuple[str, bool]], IgnoreRules] | None:
    """(name, is a folder) of a folder's entries in display order, and its ignore rules; None when
    it cannot be listed."""
    try:
        with os.scandir(abs_dir) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    except OSError:
        return None
    names = {n for n, _ in entries}
    rules = (
        IgnoreRules.for_root(Path(abs_dir), names)
        if parent_rules is None
        else parent_rules.descend(rel, abs_dir, names)
    )
    entries.sort(key=lambda e: (not e[1], e[0].lower(), e[0]))
    return entries, rules


def _render(node: _Node, indent: str, out: list[str]) -> None:
    items: list[tuple[str, _Node | None]] = [(c.name, c) for c in node.children]
    if node.truncated or (node.is_dir and not node.explored and not node.opaque):
        items.append(("...", None))
    for i, (name, child) in enumerate(items):
        last = i == len(items) - 1
        branch = "└── " if last else "├── "
        if child is None:
            out.append(f"{indent}{branch}...")
            continue
        label = f"{name}/..." if child.opaque else (f"{name}/" if child.is_dir else name)
        out.append(f"{indent}{branch}{label}")
        if child.is_dir and not child.opaque:
            _render(child, indent + ("    " if last else "│   "), out)


def is_git_repository(folder: Path) -> bool:
    """Whether ``folder`` or one of its parents holds a ``.git`` entry."""
    folder = Path(folder).resolve()
    return any((candidate / ".git").exists() for candidate in (folder, *folder.parents))


def environment_context(
    folders: Sequence[Path],
    today: date,
    *,
    max_items: int = 200,
    include_tree: bool = True,
    platform: str | None = None,
    trees: dict[str, str] | None = None,
) -> str:
    """The environment summary text. Empty when there is nothing to say (no folders).

    Neutral wording (no "I" or "you"), so the same text fits the instruction and a user message.
    It names only folders that exist: no scratch folder is offered, as none is created.
    """
    if not folders:
        return ""
    lines = [
        ENVIRONMENT_HEADING,
        f"Today's date: {today.strftime('%A, %d %B %Y')}.",
        f"Operating system: {platform or sys.platform}.",
    ]
    if len(folders) == 1:
        lines.append(f"Workspace folder: {folders[0]}")
    else:
        lines.append("Workspace folders:")
        lines += [f"- {f}" for f in folders]
    if include_tree and max_items > 0:
        for folder in folders:
            tree = trees.get(str(folder)) if trees is not None else None
            if tree is None:
                tree = folder_tree(folder, max_items)
            if tree:
                lines += [
                    "",
                    f"Folder structure of {folder} (ignored files left out, at most {max_items} entries):",
                    "",
                    tree,
                ]
    return "\n".join(lines)


ENVIRONMENT_HEADING = "# Environment"
INITIAL_MESSAGE_OPENING = "Here is the environment I am working in, for context."
INITIAL_MESSAGE_CLOSING = (
    "That is the whole setup. My first request follows in the next message. If a request needs a tool, call it "
    "rather than replying with nothing."
)
