"""Where a path really leads, and whether the server may read or write it there.

One function, :func:`place`, decides for readers (memory files) and writers (``addMemory``, the
instruction export) alike, so a file the reader calls "outside the workspace" can never be written
through. Every symlink, of the file and of each parent folder, is resolved before the verdict.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

LINK_OUTSIDE = "symlink leads outside the workspace"
PARENT_OUTSIDE = "a parent folder is a symlink that leads outside the workspace"
OUTSIDE = "outside the workspace folders and the global memory directory"
DANGLING = "dangling symlink (its target does not exist)"


def is_within(path: str, roots: Sequence[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies below one of them (plain string test)."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


_FD_LINKS = "/proc/self/fd"
_O_PATH = getattr(os, "O_PATH", 0)


def realpath(path: str) -> str:
    """``os.path.realpath(path)``, asked of the kernel where it can be.

    ``os.path.realpath`` resolves a path one ``lstat`` per component. For a path that exists,
    Linux answers the same question in three system calls: open the path itself (``O_PATH``:
    no read, no side effect, even for a device or a FIFO), read where its descriptor leads, close.
    Anything else (a missing or dangling path, no ``/proc``, another system) takes
    ``os.path.realpath``, so the answer is always the one it would give.
    """
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)
        try:
            target = os.readlink(f"{_FD_LINKS}/{fd}")
        except OSError:
            target = ""
        finally:
            os.close(fd)
        if target.startswith("/") and not target.endswith(" (deleted)"):
            return target
    return os.path.realpath(path)


def real_roots(roots: Iterable[str | Path]) -> tuple[str, ...]:
    """The roots with every symlink resolved (what :func:`place` compares against)."""
    return tuple(os.path.realpath(os.fspath(r)) for r in roots)


@dataclass(frozen=True, slots=True)
class Placement:
    """``real`` is ``path`` with every symlink resolved; ``refusal`` says why it may not be used
    (None: it lies inside the roots)."""

    path: str
    real: str
    refusal: str | None


def place(path: str | Path, roots: Sequence[str], *, writing: bool = False) -> Placement:
    """Resolve ``path`` and judge it against ``roots`` (real paths, see :func:`real_roots`).

    A reader is refused a file whose real path lies outside the roots. A writer is also refused
    a dangling symlink: writing would create a file wherever the link points (and the missing
    folders on the way), which is never what "append to AGENTS.md" means.
    """
    path = os.path.abspath(os.fspath(path))
    real = realpath(path)
    if writing and os.path.islink(path) and not os.path.exists(path):
        return Placement(path, real, DANGLING)
    if is_within(real, roots):
        return Placement(path, real, None)
    parent = os.path.dirname(path)
    if not is_within(os.path.realpath(parent), roots):
        return Placement(path, real, PARENT_OUTSIDE if is_within(os.path.normpath(parent), roots) else OUTSIDE)
    return Placement(path, real, LINK_OUTSIDE if os.path.islink(path) else OUTSIDE)
