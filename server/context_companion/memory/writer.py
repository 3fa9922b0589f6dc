"""``addMemory``: append a fact under ``## Added Memories`` of an ``AGENTS.md``, atomically.

The file is edited as bytes: the new bullet is inserted after the last non-blank line of the
``## Added Memories`` section (or a new section is appended), and every other byte stays as it
was, line endings (LF or CRLF) and a missing final newline included. The target must resolve
inside the workspace folder or the global memory directory (the same test the reader applies);
the result is written to its real file through :mod:`context_companion.fileio` (temporary file,
rename, mode kept). Concurrent calls (threads and processes alike) are serialised by an ``flock``
on the directory, so no fact is lost.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from ..containment import real_roots
from ..errors import FileWriteError, MemoryWriteError
from ..fileio import make_folder, open_directory, read_in, replace_in, resolve_for_write, stat_in
from .reading import over_limit

MEMORY_FILE_NAME = "AGENTS.md"
SECTION_HEADING = "## Added Memories"
_HEADING_RE = re.compile(rb"^##[ \t]+Added Memories[ \t]*#*[ \t]*$", re.IGNORECASE)
_SECTION_END_RE = re.compile(rb"^ {0,3}#{1,2}(?:[ \t]|$)")
_FENCE_RE = re.compile(rb"^ {0,3}(`{3,}|~{3,})")
_LEADING_DASHES = re.compile(r"^(?:[-*+](?:\s+|$))+")


def normalise_fact(fact: str) -> str:
    """One line: newlines and runs of blanks become one space; leading bullet marks dropped."""
    if not isinstance(fact, str):
        raise MemoryWriteError(None, f"the fact must be text, not {type(fact).__name__}")
    one_line = " ".join(fact.split())
    one_line = _LEADING_DASHES.sub("", one_line).strip()
    if not one_line:
        raise MemoryWriteError(None, "the fact is empty")
    return one_line


def _lines_with_ends(data: bytes) -> list[tuple[int, int]]:
    """(start, end-without-newline) of each line of ``data``."""
    out: list[tuple[int, int]] = []
    start = 0
    n = len(data)
    while start < n:
        nl = data.find(b"\n", start)
        if nl < 0:
            out.append((start, n))
            break
        end = nl - 1 if nl > start and data[nl - 1 : nl] == b"\r" else nl
        out.append((start, end))
        start = nl + 1
    return out


def insert_fact(data: bytes, fact: str) -> bytes:
    """``data`` with ``- fact`` added under ``## Added Memories`` (only insertions, no byte changed)."""
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    bullet = b"- " + fact.encode("utf-8")
    lines = _lines_with_ends(data)
    heading = -1
    fence: bytes | None = None
    for i, (a, b) in enumerate(lines):
        line = data[a:b]
        m = _FENCE_RE.match(line)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker[:1] * len(marker)
            elif marker[:1] == fence[:1] and len(marker) >= len(fence) and not line.strip()[len(marker) :].strip():
                fence = None
            continue
        if fence is None and _HEADING_RE.match(line):
            heading = i
            break
    if heading < 0:
        prefix = data
        if prefix and not prefix.endswith(b"\n"):
            prefix += newline
        if prefix.strip() and not prefix.endswith(newline + newline):
            prefix += newline  # one blank line before the new heading
        return prefix + SECTION_HEADING.encode() + newline + bullet + newline
    last = heading
    fence = None
    for i in range(heading + 1, len(lines)):
        a, b = lines[i]
        line = data[a:b]
        m = _FENCE_RE.match(line)
        if m:
            fence = None if fence is not None else m.group(1)
        elif fence is None and _SECTION_END_RE.match(line):
            break
        if line.strip():
            last = i
    a, b = lines[last]
    # Position just past the newline of line ``last`` (or its end when the file ends there).
    after = data.find(b"\n", b)
    if after < 0:
        return data + newline + bullet + newline
    insert_at = after + 1
    return data[:insert_at] + bullet + newline + data[insert_at:]


def _target(scope: str, global_dir: Path, workspace_folder: Path | None) -> Path:
    if scope == "global":
        return Path(global_dir) / MEMORY_FILE_NAME
    if scope == "workspace":
        if workspace_folder is None:
            raise MemoryWriteError(None, "scope 'workspace' needs an open workspace folder")
        return Path(workspace_folder) / MEMORY_FILE_NAME
    raise MemoryWriteError(None, f"unknown scope {scope!r}; expected 'global' or 'workspace'")


def add_memory(
    fact: str,
    scope: Literal["global", "workspace"] = "global",
    *,
    global_dir: Path,
    workspace_folder: Path | None,
    max_file_bytes: int | None = None,
) -> Path:
    """Append ``- fact`` under ``## Added Memories`` of the global or workspace ``AGENTS.md``.

    Returns the path asked for (a symlink stays one: its real file gets the new content).
    Raises :class:`MemoryWriteError` for a request that cannot be right (an empty fact, a
    workspace scope without a folder) and :class:`FileWriteError` when the file may not or cannot
    be written: it resolves outside the workspace folder and the global memory directory, is a
    dangling symlink, the OS refuses, or the result would reach ``max_file_bytes`` (the size at
    which the reader skips a memory file). Either way nothing is created or changed.
    """
    text = normalise_fact(fact)
    target = _target(scope, global_dir, workspace_folder)
    if scope == "workspace" and not Path(target.parent).is_dir():
        raise FileWriteError(target, "the workspace folder does not exist")
    roots = real_roots([global_dir, *([workspace_folder] if workspace_folder is not None else [])])
    real = resolve_for_write(target, roots)
    make_folder(real.parent, target)
    with open_directory(real.parent, target, lock=True) as dir_fd:
        old = stat_in(dir_fd, real.name, target)
        data = read_in(dir_fd, real.name, target) if old is not None else b""
        new = insert_fact(data, text)
        if max_file_bytes is not None and over_limit(len(new), max_file_bytes):
            raise FileWriteError(
                target,
                f"refused: the file would grow to {len(new)} bytes, over memory.maxFileBytes ({max_file_bytes});"
                " memory files that large are skipped. Move older facts out or raise the setting",
            )
        replace_in(dir_fd, real.name, new, old, target)
    return target
