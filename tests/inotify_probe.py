"""Which directories a process holds inotify watches on, read from ``/proc/<pid>/fdinfo`` (Linux
lists each watch of an inotify descriptor there with its inode). Imported by name, like lsp_harness."""

from __future__ import annotations

import os
import re
from pathlib import Path

_WATCH = re.compile(r"inotify wd:(\w+) ino:(\w+)")


def watched_dirs(root: Path, pid: int | str = "self") -> set[str]:
    """The directories under ``root`` (itself included, as ``"."``) that process ``pid`` watches."""
    return set(watch_descriptors(root, pid))


def watch_descriptors(root: Path, pid: int | str = "self") -> dict[str, int]:
    """Each watched directory under ``root`` → its watch descriptor (a new watch gets a new one)."""
    wds: dict[int, int] = {}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:  # closed meanwhile
            continue
        wds |= {int(ino, 16): int(wd, 16) for wd, ino in _WATCH.findall(text)}
    return {
        str(d.relative_to(root)): wds[d.stat().st_ino]
        for d in (root, *root.rglob("*"))
        if d.is_dir() and d.stat().st_ino in wds
    }
