"""``addMemory``: append a fact under ``## Added Memories`` of an ``AGENTS.md``, atomically.

The file is edited as bytes: the new bullet is inserted after the last non-blank line of the
``## Added Memories`` section (or a new section is appended), and every other byte stays as it
was, line endings (LF or CRLF) and a missing final newline included. The result is written to a
temporary file in the same directory and renamed over the target, keeping its mode (and owner
when we can). Concurrent calls (threads and processes alike) are serialised by an ``flock`` on the
directory, so no fact is lost.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from ..errors import MemoryWriteError

MEMORY_FILE_NAME = "AGENTS.md"
SECTION_HEADING = "## Added Memories"
_HEADING_RE = re.compile(rb"^##[ \t]+Added Memories[ \t]*#*[ \t]*$", re.IGNORECASE)
_SECTION_END_RE = re.compile(rb"^ {0,3}#{1,2}(?:[ \t]|$)")
_FENCE_RE = re.compile(rb"^ {0,3}(`{3,}|~{3,})")
_LEADING_DASHES = re.compile(r"^(?:[-*+](?:\s+|$))+")


@contextlib.contextmanager
def _dir_lock(directory: str) -> Iterator[None]:
    """An advisory lock on the directory itself (no sidecar file is left behind).

    ``flock`` locks belong to the open file description, and each call opens the directory
    anew, so the lock serialises threads of this process as well as other processes: no
    process-wide lock table is needed.
    """
    if sys.platform == "win32":  # pragma: no cover - no flock; writes there are not serialised
        yield
        return
    import fcntl

    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _current_umask() -> int:
    """The process umask, read without changing it (``os.umask`` is process-wide and racy)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


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
) -> Path:
    """Append ``- fact`` under ``## Added Memories`` of the global or workspace ``AGENTS.md``.

    Returns the path written. Raises :class:`MemoryWriteError` for an empty fact, a workspace
    scope without a folder, or a file or directory that cannot be read or written; the target
    is then unchanged.
    """
    text = normalise_fact(fact)
    target = _target(scope, global_dir, workspace_folder)
    if scope == "workspace" and not Path(target.parent).is_dir():
        raise MemoryWriteError(target, "the workspace folder does not exist")
    # Write through a symlinked AGENTS.md to its target instead of replacing the link.
    path = Path(os.path.realpath(target)) if os.path.islink(target) else target
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemoryWriteError(target, f"cannot create {directory}: {exc.strerror or exc}") from None
    with _dir_lock(str(directory)):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise MemoryWriteError(target, f"cannot read: {exc.strerror or exc}") from None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise MemoryWriteError(target, "not a regular file")
        data = b""
        if st is not None:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                raise MemoryWriteError(target, f"cannot read: {exc.strerror or exc}") from None
        new = insert_fact(data, text)
        try:
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
        except OSError as exc:
            raise MemoryWriteError(target, f"cannot write in {directory}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(new)
                fh.flush()
                os.fsync(fh.fileno())
            if st is not None:
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
                if hasattr(os, "chown") and os.geteuid() == 0:
                    with contextlib.suppress(OSError):
                        os.chown(tmp, st.st_uid, st.st_gid)
            else:
                os.chmod(tmp, 0o666 & ~_current_umask())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise MemoryWriteError(target, f"cannot write: {exc.strerror or exc}") from None
        with contextlib.suppress(OSError):
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
    return target
